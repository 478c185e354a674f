package pool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// New adapts a go-redis v9 client to a Pool. The caller keeps ownership of
// client: Close on the returned Pool does not close it. A
// *redis.ClusterClient makes a node that is a Redis Cluster (the Pool
// implements Cluster).
//
// The lock bounds every call with a context deadline: a client without
// ContextTimeoutEnabled is waited for only until the deadline, and one with
// MaxRetries > 0 may fail an attempt it could have won. [FromURL] avoids
// both. Over a *redis.Client, New adds a dial hook that reads the server's
// identity on each new connection (ReadIdentity), so the Pool is an
// Identifier while every connection that may answer was read; otherwise the
// lock reads the server's run with each script, at a small cost per call.
//
// A nil client, or a nil pointer of a client type, yields a Pool whose
// calls fail with an error that says so; its Close returns nil.
func New(client redis.UniversalClient) Pool {
	g := newGoRedis(client, false)
	if c, ok := g.client.(*redis.Client); ok {
		return &identifiedGoRedis{goRedis: g, id: identityOf(c)}
	}
	return g
}

// identifiedGoRedis is New's Pool over a *redis.Client: it tells the
// server's identity as the dial hook read it (dialIdentity).
type identifiedGoRedis struct {
	*goRedis
	id *dialIdentity
}

// Identity implements Identifier.
func (g *identifiedGoRedis) Identity() (Identity, bool) { return g.id.Identity() }

func newGoRedis(client redis.UniversalClient, owned bool) *goRedis {
	g := &goRedis{client: client, owned: owned}
	if isNil(client) {
		// Every method of a nil *redis.Client (and of its siblings)
		// dereferences it: the adapter must never call one.
		g.client, g.addr = nil, "<nil client>"
		if client != nil {
			g.addr = fmt.Sprintf("<nil %T>", client)
		}
		return g
	}
	switch c := client.(type) {
	case *redis.Client:
		g.addr = c.Options().Addr
		g.ctxDeadlines = c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		g.addr = strings.Join(c.Options().Addrs, ",")
		g.ctxDeadlines = c.Options().ContextTimeoutEnabled
		g.runs = &runCells{}
	case *redis.Ring:
		g.addr = fmt.Sprintf("ring(%d shards)", len(c.Options().Addrs))
		g.ctxDeadlines = c.Options().ContextTimeoutEnabled
	default:
		g.addr = fmt.Sprintf("%T", client)
	}
	return g
}

// errNilClient is returned by every call on a Pool made from a nil client.
var errNilClient = errors.New("pool: nil redis client")

// isNil reports whether client is nil, or holds a nil pointer: an interface
// holding (*redis.Client)(nil) is not itself nil.
func isNil(client redis.UniversalClient) bool {
	if client == nil {
		return true
	}
	v := reflect.ValueOf(client)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

type goRedis struct {
	client       redis.UniversalClient
	addr         string
	ctxDeadlines bool
	owned        bool
	runs         *runCells // a cluster's: see ShardIdentity
}

func (g *goRedis) Addr() string { return g.addr }

// IsCluster implements Cluster: true for a non-nil *redis.ClusterClient.
func (g *goRedis) IsCluster() bool {
	_, ok := g.client.(*redis.ClusterClient)
	return ok
}

func (g *goRedis) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if g.client == nil {
		return false, errNilClient
	}
	if ttl <= 0 {
		// go-redis would send SET without an expiry: a lock that never ends.
		return false, fmt.Errorf("pool: SetNX needs a positive ttl, got %v", ttl)
	}
	if g.ctxDeadlines {
		return g.setNX(ctx, key, value, ttl)
	}
	return bounded(ctx, func(ctx context.Context) (bool, error) { return g.setNX(ctx, key, value, ttl) })
}

func (g *goRedis) setNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	// Whole milliseconds, rounded up: go-redis would log and round a TTL
	// under a millisecond itself. SET NX answers a refusal with a nil reply,
	// which the BoolCmd turns into false without building an error.
	ttl = (ttl + time.Millisecond - 1).Truncate(time.Millisecond)
	ok, err := g.client.SetNX(ctx, key, value, ttl).Result()
	if err != nil {
		return false, deadlineErr(ctx, err)
	}
	return ok, nil
}

// deadlineErr makes a call cut short by ctx satisfy errors.Is with ctx's
// error. go-redis reports a socket timeout, which can come a hair before
// ctx's own timer marks it done: a timeout under a ctx deadline counts too.
func deadlineErr(ctx context.Context, err error) error {
	cerr := ctx.Err()
	if cerr == nil {
		var ne net.Error
		if _, ok := ctx.Deadline(); ok && errors.As(err, &ne) && ne.Timeout() {
			cerr = context.DeadlineExceeded
		}
	}
	if cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

func (g *goRedis) Eval(ctx context.Context, s *Script, keys []string, args ...any) (any, error) {
	if g.client == nil {
		return nil, errNilClient
	}
	if s == nil {
		return nil, errors.New("pool: nil script")
	}
	if g.ctxDeadlines {
		return g.eval(ctx, s, keys, args)
	}
	return bounded(ctx, func(ctx context.Context) (any, error) { return g.eval(ctx, s, keys, args) })
}

func (g *goRedis) eval(ctx context.Context, s *Script, keys []string, args []any) (any, error) {
	v, err := g.client.EvalSha(ctx, s.hash, keys, args...).Result()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// EVAL also caches the script, so the next EVALSHA succeeds.
		v, err = g.client.Eval(ctx, s.src, keys, args...).Result()
	}
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, deadlineErr(ctx, err)
	}
	// A script that switched to RESP3 can return booleans: normalise them
	// as RESP2 replies them (true as 1, false as a nil reply).
	if b, ok := v.(bool); ok {
		if b {
			return int64(1), nil
		}
		return nil, nil
	}
	return v, nil
}

// EachMaster implements Masters for a *redis.ClusterClient; for any other
// client it fails. The masters' Pools share the cluster client's
// connections to them.
func (g *goRedis) EachMaster(ctx context.Context, fn func(ctx context.Context, master Pool) error) error {
	cc, ok := g.client.(*redis.ClusterClient)
	if !ok {
		return errors.New("pool: EachMaster needs a Redis Cluster node")
	}
	var mu sync.Mutex
	var errs []error
	// go-redis stops at the first error; every master is wanted.
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		m := &goRedis{client: c, addr: c.Options().Addr, ctxDeadlines: c.Options().ContextTimeoutEnabled}
		if err := fn(ctx, m); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}

func (g *goRedis) Close() error {
	if !g.owned || g.client == nil {
		return nil
	}
	return g.client.Close()
}

// bounded runs op so that it returns by ctx's deadline, for clients that do
// not honour context deadlines themselves: op runs in a goroutine that
// outlives the call only until the client's own I/O timeout.
func bounded[T any](ctx context.Context, op func(context.Context) (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := op(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// Do implements Commander.
func (g *goRedis) Do(ctx context.Context, args ...string) (any, error) {
	if g.client == nil {
		return nil, errNilClient
	}
	if len(args) == 0 {
		return nil, errors.New("pool: Do needs a command")
	}
	do := func(ctx context.Context) (any, error) {
		a := make([]any, len(args))
		for i, s := range args {
			a[i] = s
		}
		v, err := g.client.Do(ctx, a...).Result()
		if errors.Is(err, redis.Nil) {
			return nil, nil
		}
		if err != nil {
			return nil, deadlineErr(ctx, err)
		}
		return normalMap(v), nil
	}
	if g.ctxDeadlines {
		return do(ctx)
	}
	return bounded(ctx, do)
}

// normalMap turns go-redis's RESP3 maps (map[any]any) into map[string]any,
// at any depth, as Commander documents.
func normalMap(v any) any {
	switch v := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[fmt.Sprint(k)] = normalMap(e)
		}
		return m
	case []any:
		for i, e := range v {
			v[i] = normalMap(e)
		}
	}
	return v
}

// Package rueidispool adapts a github.com/redis/rueidis client to a
// pool.Pool, so that a redlock.Client can run over rueidis instead of
// go-redis. It is a module of its own, so that programs that do not use it
// do not depend on rueidis.
//
// [FromURL] builds a client with settings suited to locking; [New] wraps a
// client the caller configured:
//
//	p, err := rueidispool.FromURL("rediss://alice:secret@redis-1:6379")
//	if err != nil {
//		return err
//	}
//	defer p.Close()
//	c, err := redlock.New([]pool.Pool{p, ...})
//
// rueidis pipelines concurrent commands over a few shared connections, so a
// slow reply to another command delays the lock's: give the lock a client
// of its own. The Pool implements pool.Notifier (a dedicated connection per
// Listener) and, over a client in cluster mode, pool.Cluster. See
// docs/ecosystem.md, "Choosing a client adapter".
package rueidispool

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/redlockgo/redlock/pool"
)

// New adapts a rueidis client to a pool.Pool. The caller keeps ownership of
// client: Close on the returned Pool does not close it. Commands run with
// Do, never DoCache, and are not retried by rueidis, whatever the client's
// options. Addr is the client's node addresses when New is called.
//
// The Pool is not a pool.Identifier: the lock reads the server's run with
// each script instead, and cannot read its persistence, so after a restart
// the node sits out the quarantine even if it persists every write
// (FromURL's pools read it). A nil client, or a nil pointer of a type that
// implements rueidis.Client, yields a Pool whose calls fail with an error
// that says so; its Close returns nil.
func New(client rueidis.Client) pool.Pool {
	if isNil(client) {
		a := &adapter{addr: "<nil client>"}
		if client != nil {
			a.addr = fmt.Sprintf("<nil %T>", client)
		}
		return a
	}
	return &adapter{client: client, addr: strings.Join(slices.Sorted(maps.Keys(client.Nodes())), ",")}
}

// errNilClient is returned by every call on a Pool made from a nil client.
var errNilClient = errors.New("rueidispool: nil rueidis client")

// isNil reports whether client is nil, or holds a nil pointer: an interface
// holding a nil pointer is not itself nil, and its methods may dereference
// it.
func isNil(client rueidis.Client) bool {
	if client == nil {
		return true
	}
	v := reflect.ValueOf(client)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

type adapter struct {
	client rueidis.Client
	addr   string
	owned  bool
}

func (a *adapter) Addr() string { return a.addr }

// IsCluster implements pool.Cluster: true for a rueidis client in cluster
// mode, which routes each command to the shard of its key's slot.
func (a *adapter) IsCluster() bool {
	return a.client != nil && a.client.Mode() == rueidis.ClientModeCluster
}

func (a *adapter) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if a.client == nil {
		return false, errNilClient
	}
	if ttl <= 0 {
		// SET without PX would leave a key that never expires.
		return false, fmt.Errorf("rueidispool: ttl must be positive, got %v", ttl)
	}
	ms := max(ttl.Milliseconds(), 1) // Redis keeps milliseconds; never round down to 0
	cmd, err := build(func() rueidis.Completed {
		return a.client.B().Set().Key(key).Value(value).Nx().PxMilliseconds(ms).Build()
	})
	if err != nil {
		return false, err
	}
	err = a.client.Do(ctx, cmd).Error()
	switch {
	case err == nil:
		return true, nil
	case rueidis.IsRedisNil(err):
		return false, nil
	default:
		return false, err
	}
}

func (a *adapter) Eval(ctx context.Context, s *pool.Script, keys []string, args ...any) (any, error) {
	if a.client == nil {
		return nil, errNilClient
	}
	if s == nil {
		return nil, errors.New("rueidispool: nil script")
	}
	argv, err := encodeArgs(args)
	if err != nil {
		return nil, err
	}
	// A Completed command is recycled by Do, so each call builds its own.
	evalsha := func() rueidis.Completed {
		return a.client.B().Evalsha().Sha1(s.Hash()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()
	}
	eval := func() rueidis.Completed {
		return a.client.B().Eval().Script(s.Source()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()
	}
	cmd, err := build(evalsha)
	if err != nil {
		return nil, err
	}
	res := a.client.Do(ctx, cmd)
	if re, ok := rueidis.IsRedisErr(res.Error()); ok && re.IsNoScript() {
		// EVAL also caches the script, so the next EVALSHA succeeds.
		res = a.client.Do(ctx, eval())
	}
	return normalize(res)
}

func (a *adapter) Close() error {
	if a.owned && a.client != nil {
		a.client.Close()
	}
	return nil
}

// build runs a command builder. rueidis's builder for a cluster client panics
// when a command's keys hash to different slots; that is a property of the
// caller's keys, so it becomes an error here. Any other panic is a bug and
// goes on.
func build(fn func() rueidis.Completed) (cmd rueidis.Completed, err error) {
	defer func() {
		if r := recover(); r != nil {
			msg, ok := r.(string)
			if !ok || !strings.Contains(msg, "slot") {
				panic(r)
			}
			err = fmt.Errorf("rueidispool: %s", msg)
		}
	}()
	return fn(), nil
}

// Do implements pool.Commander.
func (a *adapter) Do(ctx context.Context, args ...string) (any, error) {
	if a.client == nil {
		return nil, errNilClient
	}
	if len(args) == 0 {
		return nil, errors.New("rueidispool: Do needs a command")
	}
	cmd, err := build(func() rueidis.Completed { return a.client.B().Arbitrary(args...).Build() })
	if err != nil {
		return nil, err
	}
	return normalize(a.client.Do(ctx, cmd))
}

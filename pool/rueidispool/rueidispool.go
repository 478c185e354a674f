// Package rueidispool adapts a github.com/redis/rueidis client to a
// pool.Pool, so that a redlock.Client can run over rueidis instead of
// go-redis. It is a module of its own, so that programs that do not use it do
// not depend on rueidis.
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
// rueidis sends the commands of concurrent callers over a few shared
// connections (auto-pipelining). That suits the lock, whose commands are
// small and answered at once: a lock's fan-out needs no connection per call.
// The cost is head-of-line blocking: a slow reply to another command on the
// same connection delays the lock's, which then fails at its node timeout.
// Give the lock a client of its own, as FromURL does, rather than sharing one
// that also runs large or slow commands. Client-side caching is never used by
// the lock; FromURL turns it off (DisableCache), which saves a CLIENT
// TRACKING round trip per connection and the server's tracking table.
//
// The Pool implements pool.Notifier, so that a release wakes the lock's
// waiters instead of their backoff: each Listener holds one connection of
// its own (rueidis's Dedicate), outside the auto-pipelined ones, and opens
// it again, subscribed to the same channels, after the node restarts or the
// connection is lost.
//
// A node may be a Redis Cluster: pass New a rueidis client in cluster mode
// (rueidis.NewClient with the cluster's seed addresses, which detects it).
// The Pool then implements pool.Cluster, so that the lock keeps a key's
// companion keys in its hash slot, and its Listener is a
// pool.ShardedListener: on a cluster with sharded pub/sub (Redis 7.0 and
// later) the lock's channels are subscribed with SSUBSCRIBE on the master
// that owns their slot, one dedicated connection per such master, and the
// release scripts publish with SPUBLISH, which only that shard sends. Plain
// channels are subscribed on one node, which hears a PUBLISH like every
// shard. FromURL makes standalone nodes only.
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
// client: Close on the returned Pool does not close it.
//
// rueidis honours context deadlines on every call, so the lock's node timeout
// bounds each command. A call that times out may still reach the node later;
// the lock allows for that. Commands run with Do, never DoCache, and are not
// retried by rueidis (SET and EVALSHA are not read-only), whatever the
// client's options.
//
// Addr is the client's node addresses, as rueidis reports them when New is
// called.
//
// The Pool is not a pool.Identifier: the client's connections open where
// the adapter does not see them. The lock's restart quarantine covers its
// node all the same: the lock's Client reads the server's run in the same
// round trip as each of its scripts (redlock.WithQuarantine). It cannot
// read CONFIG that way, so after a restart the node sits out the
// quarantine even if it persists every write; FromURL reads it.
//
// A nil client, or a nil pointer of a type that implements rueidis.Client,
// yields a Pool whose SetNX, Eval and Listen fail with an error that says
// so, without touching client. Its Addr names the nil client's type
// ("<nil client>" for an untyped nil), IsCluster reports false, and Close,
// having nothing to release, returns nil.
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

// Package pool is one independent Redis node, as the lock algorithm sees it.
//
// Users of the lock need one call: [FromURL] for one node, [FromURLs] for
// several, from redis://, rediss:// or redis+cluster:// URLs, with settings
// suited to locking; or [New] over a go-redis v9 client of their own:
//
//	pools, err := pool.FromURLs("redis://127.0.0.1:6379", "redis://127.0.0.1:6380", "redis://127.0.0.1:6381")
//
// Every Pool handed to one redlock.Client must reach a different,
// independent Redis master (a Redis Cluster of masters is one such node):
// two pools on one server, or on a primary and its replica, break the
// majority.
//
// The rest is for authors of adapters of other Redis clients (see
// pool/rueidispool and pool/conformance): the [Pool] interface and its
// optional ones, [Identifier] for the restart quarantine, [Cluster], and
// [Notifier], through which a release wakes the lock's waiters. See
// docs/ecosystem.md, "Writing another adapter".
package pool

import (
	"context"
	"time"
)

// Pool is one Redis node. Implementations must be safe for concurrent use and
// must honour the deadline of ctx on every call: the lock bounds each node by
// a short timeout and relies on the call returning by then.
type Pool interface {
	// Addr names the node for errors and logs (host:port). It never contains
	// credentials.
	Addr() string

	// SetNX runs SET key value NX PX ttl. It reports true when the key was set,
	// false when the key already existed. A non-nil error means the outcome is
	// unknown: the command may or may not have been applied.
	SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error)

	// Eval runs script with EVALSHA, falling back to EVAL when the node answers
	// NOSCRIPT (its script cache is empty after a restart). Replies are
	// normalised: integers as int64, strings as string, arrays as []any, and a
	// nil reply as (nil, nil).
	Eval(ctx context.Context, script *Script, keys []string, args ...any) (any, error)

	// Close releases the node's connections, if the Pool owns them.
	Close() error
}

// Cluster is an optional interface of a Pool whose node is a Redis Cluster
// (one Redlock node made of several shards). The lock names a key's
// companion keys in the key's hash slot, so that each of its scripts
// touches one slot. A Pool that wraps another should forward it.
type Cluster interface {
	// IsCluster reports whether the node is a Redis Cluster.
	IsCluster() bool
}

// Masters is an optional interface of a Pool whose node is a Redis Cluster:
// the tools that look at a node's servers (redlock.CheckNodes,
// redlock.DeclareFresh) read and declare each shard on its master through
// it. The go-redis adapter over a *redis.ClusterClient implements it
// (FromURL and FromURLs with redis+cluster://, New); a Pool that wraps
// another should forward it.
type Masters interface {
	// EachMaster calls fn for every shard master the cluster's client
	// knows, in parallel, with a Pool connected to that master alone: its
	// Eval and Do run there (a script called with no key reads that
	// master), and a key of a slot it does not serve is answered MOVED.
	// The Pool is valid only during fn; it implements Commander. It
	// returns the errors of fn, joined, or why the masters could not be
	// listed.
	EachMaster(ctx context.Context, fn func(ctx context.Context, master Pool) error) error
}

// Commander is an optional interface of a Pool that runs any command on its
// node. Tools that look at a node rather than lock on it use it for what no
// script may call: INFO, CONFIG GET, SCAN (redlock.CheckNodes and
// redlock.DeclareFresh). The pools of FromURL, FromURLs and New implement
// it, and so do those of rueidispool. On a Redis Cluster node a command
// without a key reaches a shard of the client's choosing, so the tools go
// to each shard master instead (Masters). A Pool that wraps another should forward it.
type Commander interface {
	// Do runs the command args (its name first) and returns the reply,
	// normalised as Eval's: integers as int64, strings as string, arrays
	// as []any, a RESP3 map as map[string]any, and a nil reply as
	// (nil, nil). It honours ctx's deadline as Eval does.
	Do(ctx context.Context, args ...string) (any, error)
}

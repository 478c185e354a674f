package redlock

import (
	"context"
	"slices"
	"time"
)

// TryLockAll makes one attempt to take the locks on every key of keys at
// once, for ttl: it returns one Lock over all of them, or takes none. Each
// node runs one script that sets every key to the lock's token (SET PX) if
// none of them exists, and otherwise sets nothing; the lock is obtained when
// a majority of nodes did, within validity, by the same rule as TryLock.
// A failed attempt is undone on every node where it may have landed, in the
// background, each call bounded by the node timeout; nothing of it is left
// once that cleanup has answered.
//
// keys are sorted and duplicates dropped, so the order of the caller's keys
// does not matter and Keys() lists them sorted. More than MaxKeys keys
// (once duplicates are dropped), an empty keys, or a key that TryLock
// refuses (empty, or beginning with the reserved prefix "redlock:") is an
// error, and no node is called.
//
// On failure the error wraps ErrNotObtained (and ctx.Err() when ctx ended
// the attempt), with one *NodeError per node that did not agree; a node
// where one of the keys was held reports ErrTaken and names that key.
// WithFencing gives the lock a fence greater than that of every earlier
// fenced acquisition of any of the keys, single or multi. WithFairness has
// no effect: TryLockAll does not join the keys' queues of waiters.
//
// The returned Lock extends, unlocks and auto-extends all keys together: a
// node counts toward a majority only while it holds every key with the
// lock's token. On Redis Cluster nodes every key of one multi-lock must
// hash to one slot: give them the same hash tag, as in "{order:42}:items"
// and "{order:42}:invoice"; otherwise TryLockAll returns an error saying
// so, before any node is called (when a node is a cluster the Client knows
// of: a redis+cluster:// pool; a cluster-mode server behind a plain URL
// answers CROSSSLOT, reported as that node's error). The companion keys the
// library adds are named in each key's slot there.
func (c *Client) TryLockAll(ctx context.Context, keys []string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: multiKind, keys: keys, ttl: ttl, opts: opts})
}

// LockAll takes the locks on every key of keys at once, as TryLockAll does,
// waiting until it succeeds, the retry strategy stops, or ctx ends. Two
// LockAll calls over overlapping sets never deadlock: each attempt takes all
// its keys or none, on each node in one step, and what it keeps while it
// waits (the reservations below) is free to any call with an earlier
// ticket.
//
// Waiting policy: LockAll tries again after each delay of the retry
// strategy (WithRetry; retry k after NextDelay(k)), and at once when one
// of its keys is freed for it, in any Client. Each attempt that a pause
// follows keeps the call's place in every key's queue of waiters (one
// ticket, its arrival, for the whole call): a key freed while it heads
// that queue is reserved for it, neither handed to a later Lock waiter
// nor open to a SET NX, and it is told at once; it takes all its keys
// when each is free to it. So Lock callers that came after it do not pass
// it forever, and two LockAll calls are served in ticket order. A key
// freed by expiry, not by a release, is noticed at the next retry (the
// strategy's largest delay: 250ms by default), as is a wake-up lost with
// a listener's connection. When the call ends its place leaves every
// queue, in the background, and a key reserved for it passes to the next
// waiter, or, with none, is freed and wakes the calls watching it. While it
// pauses, an attempt every third of its TTL (at least a third of a second;
// not one of the strategy's retries) keeps its place and reservations,
// which last that beat, two node timeouts and a second: so a Client that
// died blocks a key that long at most, whatever its retry delay.
//
// On failure the error wraps ErrNotObtained and, when ctx ended the wait,
// ctx.Err() (ErrClosed when the Client closed), with the per-node detail of
// the last attempt; it returns within ctx's deadline whatever the nodes do.
func (c *Client) LockAll(ctx context.Context, keys []string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: multiKind, keys: keys, ttl: ttl, opts: opts, wait: true})
}

// Keys returns every key of the lock, sorted: one for a lock taken by
// TryLock or Lock, all of them for one taken by TryLockAll or LockAll. It
// returns nil for a nil Lock. The slice is the caller's.
func (l *Lock) Keys() []string {
	if l == nil || l.kind == nil {
		return nil
	}
	return slices.Clone(l.kind.Watched())
}

// DoAll is Do over several keys: it takes them all as LockAll does
// (retrying on the retry strategy until ctx ends), runs fn while keeping
// every key alive, and releases them all when fn returns or panics. fn's
// context is canceled with a cause wrapping ErrLockLost when the set can no
// longer be guaranteed (a majority of nodes no longer holds every key, or
// extensions did not get through in time). Errors are as for Do.
func (c *Client) DoAll(ctx context.Context, keys []string, ttl time.Duration, fn func(ctx context.Context) error, opts ...LockOption) error {
	return c.do(ctx, fn, opts, func(all []LockOption) (*Lock, error) { return c.LockAll(ctx, keys, ttl, all...) })
}

package redlock

import (
	"context"
	"slices"
	"time"
)

// TryLockAll makes one attempt to take the locks on every key of keys at
// once, for ttl: it returns one Lock over all of them, or takes none. On
// each node one script sets every key or none; the lock is obtained when a
// majority of nodes set them all within validity, as for TryLock. A failed
// attempt is undone in the background, each call bounded by the node
// timeout. On failure the error wraps ErrNotObtained (and ctx.Err() when
// ctx ended the attempt), with one *NodeError per node that did not agree;
// ErrTaken names a key that was held.
//
// keys are sorted and deduplicated (Keys() lists them so). More than
// MaxKeys keys, no key, or a key TryLock refuses is an error, and no node
// is called; so is, on a Redis Cluster node, keys that do not share one
// hash slot (give them one hash tag, as in "{order:42}:items").
//
// The returned Lock extends, unlocks and auto-extends all keys together.
// WithFencing gives it a fence greater than every earlier fenced
// acquisition of any of its keys; WithFairness has no effect. See
// docs/multilock.md.
func (c *Client) TryLockAll(ctx context.Context, keys []string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: multiKind, keys: keys, ttl: ttl, opts: opts})
}

// LockAll takes the locks on every key of keys at once, as TryLockAll does,
// waiting until it succeeds, the retry strategy stops, or ctx ends; it
// returns within ctx's deadline whatever the nodes do. On failure the error
// wraps ErrNotObtained and, when ctx ended the wait, ctx.Err() (ErrClosed
// when the Client closed), with the per-node detail of the last attempt.
//
// It retries after each delay of the retry strategy, and at once when one
// of its keys is freed for it. While it waits it keeps one place in every
// key's queue: a key freed while it heads that queue is reserved for it,
// so later Lock callers do not pass it forever. Two LockAll calls over
// overlapping sets never deadlock and are served in arrival order. A
// Client that died keeps its reservations for at most a third of the TTL
// (at least a third of a second) plus two node timeouts and a second. See
// docs/multilock.md, "Key order and no deadlock".
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

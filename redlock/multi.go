package redlock

import (
	"context"
	"slices"
	"time"
)

// TryLockAll makes one attempt to take the locks on every key of keys at
// once, for ttl: it returns one Lock over all of them, or takes none; the
// Lock extends, unlocks and auto-extends them together. Errors are as for
// TryLock, ErrTaken naming a key that was held. keys are sorted and
// deduplicated; more than MaxKeys keys, no key, a key TryLock refuses, or,
// on a Redis Cluster node, keys of different hash slots (give them one hash
// tag, as in "{order:42}:items") is an error, and no node is called.
// WithFencing gives a fence greater than every earlier fenced acquisition
// of any of the keys; WithFairness has no effect. See docs/multilock.md.
func (c *Client) TryLockAll(ctx context.Context, keys []string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: multiKind, keys: keys, ttl: ttl, opts: opts})
}

// LockAll takes the locks on every key of keys at once, as TryLockAll does,
// waiting as Lock does until it succeeds, the retry strategy stops, or ctx
// ends; errors are as for Lock. While it waits it holds one place in every
// key's queue, and a key freed for it is reserved for it, so later callers
// do not pass it forever; two LockAll calls over overlapping sets never
// deadlock. A Client that died keeps such a reservation for at most a
// third of its TTL plus a few seconds. See docs/multilock.md.
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

package redlock

import (
	"context"
	"time"
)

// TryRLock makes one attempt to take a read lock on key for ttl: a shared
// hold that any number of readers may have at once, which excludes writers
// (Lock, TryLock). It returns the reader's *Lock, whose Extend, Unlock and
// auto-extension act on that reader only, or an error as TryLock's, with
// ErrTaken where a writer holds the key or waits for it (so readers cannot
// starve a waiting writer). WithFencing gives a fence greater than that of
// every fenced acquisition of key completed before; WithFairness is
// ignored. See docs/rwlock.md.
func (c *Client) TryRLock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: readerKind, key: key, ttl: ttl, opts: opts})
}

// RLock takes a read lock on key for ttl as TryRLock does, waiting until it
// succeeds, the retry strategy (WithRetry) stops, ctx ends or the Client
// closes; it returns within ctx's deadline whatever the nodes do. Retry k
// comes NextDelay(k) after the one before, or at once when a writer's
// Unlock frees the key, in any Client. Readers do not queue: under a stream
// of writers they may wait long. On failure the error wraps ErrNotObtained,
// the per-node detail of the last attempt and, when ctx ended the wait,
// ctx.Err(). See docs/rwlock.md, "Blocking: RLock".
func (c *Client) RLock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: readerKind, key: key, ttl: ttl, opts: opts, wait: true})
}

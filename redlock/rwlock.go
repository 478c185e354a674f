package redlock

import (
	"context"
	"time"
)

// TryRLock makes one attempt to take a read lock on key for ttl: a shared
// hold that any number of readers may have at once, which excludes writers
// (Lock, TryLock) on the same key. It returns the reader's *Lock, or an
// error wrapping ErrNotObtained (and ctx.Err() when ctx ended the attempt)
// with one *NodeError per node that did not agree: ErrTaken where a writer
// holds the key or waits for it, so readers cannot starve a waiting writer.
//
// Each reader is a lease of its own, with its own token and expiry: Extend,
// Unlock, WithAutoExtend and Done/Err act on that reader only. WithFencing
// gives it a fence greater than that of every fenced acquisition of key
// completed before it began (overlapping readers may share one);
// WithFairness is ignored. Arguments are checked as by TryLock; the cleanup
// of a failed attempt runs in the background. See docs/rwlock.md.
func (c *Client) TryRLock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: readerKind, key: key, ttl: ttl, opts: opts})
}

// RLock takes a read lock on key for ttl (see TryRLock), waiting until it
// succeeds, the retry strategy (WithRetry) stops, ctx ends or the Client
// closes. Retry k is a new attempt, NextDelay(k) after the one before it,
// or at once when the writer's Unlock leaves the key free, in any Client:
// a refused attempt registers the Client as a watcher of the key on each
// node, in the same script, and the release there tells it (as for
// LockAll; see docs/rwlock.md). A writer's key freed otherwise (its TTL
// ran out, or a waiting writer gave up) is noticed by the next attempt,
// with the default strategy within 250ms plus one attempt; so is a wake-up
// lost with a listener's connection. On failure the error wraps
// ErrNotObtained, the per-node detail of the last attempt that ran to its
// decision and, when ctx ended the wait, ctx.Err(); it returns within ctx's
// deadline whatever the nodes do.
func (c *Client) RLock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: readerKind, key: key, ttl: ttl, opts: opts, wait: true})
}

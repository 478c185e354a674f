package redlock

import (
	"context"
	"time"
)

// TryAcquirePermit makes one attempt to take one of limit permits of key
// for ttl, a counting semaphore: at most limit holders of key at once,
// across all Clients. It returns the permit as a *Lock, or an error wrapping
// ErrNotObtained (and ctx.Err() when ctx ended the attempt) with one
// *NodeError per node that did not agree: ErrTaken where every permit is
// held.
//
// Each permit has its own token and expiry: Extend, Unlock, WithAutoExtend,
// Done/Err and WithFencing work on it as on a lock; WithFairness is
// ignored. Every caller of key must pass the same limit, and key must not
// be used as a lock key too. limit must be between 1 and MaxPermits, and
// the other arguments are checked as by TryLock; otherwise it returns an
// error without calling a node. The cleanup of a failed attempt runs in the
// background. See docs/permits.md.
func (c *Client) TryAcquirePermit(ctx context.Context, key string, limit int, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: permitKind, key: key, limit: limit, ttl: ttl, opts: opts})
}

// AcquirePermit takes one of limit permits of key for ttl (see
// TryAcquirePermit), waiting until it succeeds, the retry strategy
// (WithRetry) stops, ctx ends or the Client closes. Retry k is a new
// attempt, NextDelay(k) after the one before it, or at once when a
// holder's Unlock frees a permit, in any Client: a refused attempt
// registers the Client as a watcher of key on each node, in the same
// script, and the release there tells it (as for LockAll; see
// docs/permits.md). A permit freed by expiry is noticed by the next
// attempt, with the default strategy within 250ms plus one attempt; so is
// a wake-up lost with a listener's connection. On failure the error wraps
// ErrNotObtained, the per-node detail of the last attempt that ran to its
// decision and, when ctx ended the wait, ctx.Err(); it returns within ctx's
// deadline whatever the nodes do.
func (c *Client) AcquirePermit(ctx context.Context, key string, limit int, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: permitKind, key: key, limit: limit, ttl: ttl, opts: opts, wait: true})
}

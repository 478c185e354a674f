package redlock

import (
	"context"
	"time"
)

// TryAcquirePermit makes one attempt to take one of limit permits of key
// for ttl, a counting semaphore: at most limit holders of key at once
// across all Clients. It returns the permit as a *Lock with its own token
// and expiry, or an error as TryLock's, with ErrTaken where every permit is
// held. Every caller of key must pass the same limit, between 1 and
// MaxPermits, and key must not be a lock key too. WithFairness is ignored.
// See docs/permits.md.
func (c *Client) TryAcquirePermit(ctx context.Context, key string, limit int, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: permitKind, key: key, limit: limit, ttl: ttl, opts: opts})
}

// AcquirePermit takes one of limit permits of key for ttl as
// TryAcquirePermit does, waiting until it succeeds, the retry strategy
// (WithRetry) stops, ctx ends or the Client closes; it returns within ctx's
// deadline whatever the nodes do. Retry k comes NextDelay(k) after the one
// before, or at once when a holder's Unlock frees a permit, in any Client.
// On failure the error wraps ErrNotObtained, the per-node detail of the
// last attempt and, when ctx ended the wait, ctx.Err(). See
// docs/permits.md, "Blocking: AcquirePermit".
func (c *Client) AcquirePermit(ctx context.Context, key string, limit int, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: permitKind, key: key, limit: limit, ttl: ttl, opts: opts, wait: true})
}

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
// A permit is one of limit slots of the semaphore, each held like an
// exclusive lock on its own: a majority of nodes must agree on the same
// slot, with the same validity rule as Lock, so no two holders ever hold the
// same slot and there are never more than limit holders. Each permit has its
// own token and expiry: Extend, Unlock, WithAutoExtend, Done/Err and
// WithFencing work on it as on a lock, and a crashed holder's permit frees
// itself at its TTL. Every caller of key must pass the same limit. The key
// holds a Redis hash on the nodes; it must not be used as a lock key too.
// WithFairness does not apply and is ignored. See docs/permits.md.
//
// limit must be between 1 and MaxPermits; ttl has the range of TryLock's;
// otherwise, or with a key TryLock refuses (empty or reserved), it returns an error without calling a
// node. The cleanup of a failed attempt runs in the background, each node
// call bounded by the node timeout.
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

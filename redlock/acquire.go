package redlock

import (
	"context"
	"time"
)

// TryLock makes one attempt to take the lock on key for ttl; it does not
// wait for a holder. It returns the lock, or an error wrapping
// ErrNotObtained (and ctx.Err() when ctx ended the attempt) with one
// *NodeError per node that did not agree; a key that holds another kind of
// lock, or a key of the application's, is reported as ErrWrongKind.
// WithFairness makes it take the lock only if nobody waits for it.
//
// The attempt returns once a majority has decided; once a node says the
// key is held, silent nodes get at most a quarter of the node timeout
// (50ms at most). When simultaneous callers split the nodes so that none
// has a majority (each won some nodes, every other node said held), it
// tries up to twice more after a random delay (at most 50ms); an attempt
// in which a node failed, or more nodes stayed silent than a majority can
// spare, is no split and is refused at once. The cleanup of a failed
// attempt runs in the background.
//
// ttl counts in whole milliseconds, from the shortest that outlasts the
// drift allowance (3ms by default) to the Client's max TTL (WithMaxTTL).
// key must not be empty nor begin with the reserved prefix "redlock:"
// (docs/design.md, "Key names"); any other key is the caller's. Outside
// these bounds every acquisition returns an error without calling a node.
func (c *Client) TryLock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: exclusiveKind, key: key, ttl: ttl, opts: opts})
}

// Lock takes the lock on key for ttl, waiting until it succeeds, the
// retry strategy (WithRetry) stops, or ctx ends; it returns within ctx's
// deadline whatever the nodes do, and a lock it returns is valid (Until()
// in the future). On failure the error wraps ErrNotObtained and, when ctx
// ended the wait, ctx.Err(). Arguments are checked as by TryLock.
//
// If the key is held, Lock waits in the queue kept next to the key on
// every node: waiters are served in arrival order across Clients, and a
// release hands the key to the first of them. Retry k is a round sent
// NextDelay(k) after the one before; rounds that only keep the waiter's
// place (every third of the TTL) are not retries. Lock gives up once its
// last retry's round has answered. WithFairness joins the queue without
// trying first; NoRetry makes one attempt.
//
// When a majority of the nodes sits out the restart quarantine past ctx's
// deadline, Lock returns at once with an error that says when they count
// (IsUnavailable); without a deadline it waits and logs one line. Every
// blocking acquisition does the same (docs/safety.md, "No silent waits").
func (c *Client) Lock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: exclusiveKind, key: key, ttl: ttl, opts: opts, wait: true})
}

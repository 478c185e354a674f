package redlock

import (
	"context"
	"time"
)

// TryLock makes one attempt to take the lock on key for ttl; it does not
// wait for a holder. It returns the lock, or an error wrapping
// ErrNotObtained (and ctx.Err() when ctx ended the attempt) with one
// *NodeError per node that did not agree (ErrWrongKind where the key holds
// something else). The cleanup of a failed attempt runs in the background.
// WithFairness makes it take the lock only if nobody waits for it. When
// simultaneous callers split the nodes so that none has a majority, it
// tries up to twice more after a random delay (at most 50ms); an attempt in
// which nodes failed or stayed silent beyond what a majority can spare is
// no split, and is refused at once.
//
// ttl counts in whole milliseconds, up to the Client's max TTL (WithMaxTTL);
// key must not be empty nor begin with the reserved prefix "redlock:"
// (docs/design.md, "Key names"). Otherwise every acquisition returns an
// error without calling a node.
func (c *Client) TryLock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: exclusiveKind, key: key, ttl: ttl, opts: opts})
}

// Lock takes the lock on key for ttl as TryLock does, waiting until it
// succeeds, the retry strategy (WithRetry) stops, or ctx ends. It returns
// within ctx's deadline whatever the nodes do, and a lock it returns is
// valid (Until() in the future); on failure the error wraps ErrNotObtained
// and, when ctx ended the wait, ctx.Err().
//
// While the key is held, Lock waits in a queue kept on the nodes: waiters
// are served in arrival order across Clients, and a release hands the key
// to the first. Retry k, NextDelay(k) after the one before, also finds a
// key freed by expiry; with NoRetry, Lock makes one attempt. When the
// restart quarantine keeps a majority out past ctx's deadline, Lock returns
// at once (IsUnavailable). See docs/usage.md, "Behaviour you can rely on".
func (c *Client) Lock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: exclusiveKind, key: key, ttl: ttl, opts: opts, wait: true})
}

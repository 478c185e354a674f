package redlock

import (
	"context"
	"time"
)

// TryLock makes one attempt to take the lock on key for ttl. It returns the
// lock, or an error wrapping ErrNotObtained (and ctx.Err() when ctx ended the
// attempt) with one *NodeError per node that did not agree. It does not wait
// for a slow node once the majority has decided, and the cleanup of a failed
// attempt runs in the background. Once a node has answered that the key is
// held, it waits for the nodes still silent at most a quarter of the node
// timeout (50ms at most) before it gives up, rather than the whole node
// timeout: a silent node does not stall contended attempts, nor the waiters
// whose nodes such an attempt took. (Not less: a node that restarted needs
// a new connection, and must still be able to answer.) WithFairness makes it respect the queue of
// waiters: it takes the lock only if nobody waits for it.
//
// Simultaneous callers can split the nodes so that none has a majority
// (three Clients on three nodes, one node each). A refused TryLock that won
// at least one node while every other node said the key is held may be in
// such a split, and tries again after a random delay (1ms to a quarter of
// the node timeout, at most 50ms), up to twice while the refusals still
// look so, before it reports ErrNotObtained; so do TryRLock, TryAcquirePermit and TryLockAll. A key
// held by one owner on every node gives no yes, and is refused after one
// attempt. So is an attempt in which a node failed (an error, the node
// timeout), or which decided without the answers of more nodes than a
// majority can spare (silent past the grace above): failing nodes are no
// split.
//
// SET NX cannot tell a lock from a key of another kind, so a refused
// TryLock asks one node that refused what the key holds (one more round
// trip, bounded by the node timeout): a key that holds permits, or one of
// the application's, is reported as that node's ErrWrongKind. Lock learns
// it from its first round in the queue, and returns at once.
//
// ttl counts in whole milliseconds, as Redis does, from the shortest that
// outlasts the drift allowance (3ms with the default WithDriftFactor) to
// the Client's max TTL (WithMaxTTL, a minute by default); outside that
// range TryLock and Lock return an error without calling a node, which
// names the option for a longer TTL.
//
// key must not be empty nor begin with "redlock:", the one prefix under
// which the library keeps every name it writes (docs/design.md, "Key
// names"): every acquisition refuses such a key with an error saying
// "reserved", without calling a node. Any other key is the caller's, and
// keys that differ are independent locks ("x" and "x:fence" included).
func (c *Client) TryLock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: exclusiveKind, key: key, ttl: ttl, opts: opts})
}

// Lock takes the lock on key for ttl, waiting until it succeeds or ctx
// ends. On failure the error wraps ErrNotObtained and, when ctx ended the
// wait, ctx.Err(); it returns within ctx's deadline whatever the nodes do,
// and a lock it returns is valid (Until() in the future). When a majority
// of the nodes sits out the restart quarantine (WithQuarantine) past ctx's
// deadline, it returns at once after the attempt that told it, with an
// error that names the quarantine and when the nodes count (IsUnavailable);
// without a deadline it waits, and logs one line saying so (WithLogger's
// loggers, else slog.Default()). RLock, AcquirePermit, LockAll, Do,
// Campaign and Lead do the same.
//
// It tries once at once. If the lock is held, it joins the queue of waiters
// kept next to the key on every node (part of the same attempt). A release
// hands the key to the first waiter on each node and tells it: the waiter
// holds the lock once a majority of nodes have, without a new attempt and
// without waking anyone else. Waiters are served in the order they queued,
// across Clients and processes. Retry k (k = 1, 2, ...) of the retry
// strategy (WithRetry) is one round of calls to the nodes, sent NextDelay(k)
// (at least 10ms) after the attempt before it: it refreshes the waiter's
// place and takes the key if it is free and the waiter is first, which
// covers a lost message and an expiry. Between retries further apart than a
// third of the TTL, rounds at that interval keep the waiter's place; they
// are not retries and do not use up the strategy, though they too take a
// free key. When the strategy stops, Lock returns the last error once the
// last retry's round has answered, never before that retry was due.
//
// WithFairness skips the first try: the caller's first attempt is to join
// the queue, so it never overtakes a waiter. So does a Lock call on a key
// that this Client's Lock calls found held within the last second: under
// contention a release hands the key straight to a waiter, so the try could
// only be refused. With NoRetry, Lock makes one attempt, and leaves the
// queue again if it joined it.
func (c *Client) Lock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: exclusiveKind, key: key, ttl: ttl, opts: opts, wait: true})
}

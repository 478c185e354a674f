package redlock

import (
	"context"
	"time"
)

// TryRLock makes one attempt to take a read lock on key for ttl: a shared
// hold that any number of readers may have at once, which excludes Lock and
// TryLock on the same key and which a writer's lock excludes. It returns
// the reader's *Lock, or an error wrapping ErrNotObtained (and ctx.Err()
// when ctx ended the attempt) with one *NodeError per node that did not
// agree: ErrTaken where a writer holds the key or waits for it.
//
// Each reader is a lease of its own on a majority of nodes, with its own
// token and expiry, and the same validity rule as Lock: Extend, Unlock,
// WithAutoExtend, Done/Err and Client.Do's loss reporting work on it as on
// a lock, and act on that reader only. A reader that dies holds the key no
// longer than its own TTL; no reader ever extends another's lease.
//
// Writers go first: a reader is refused on a node while a writer waits in
// the key's queue there (a Lock call that found the key held), so a stream
// of readers cannot starve a waiting writer. TryLock does not queue, so it
// gets no such priority. Readers waiting in RLock are not queued: under a
// stream of writers they may wait long. WithFencing gives the reader a fence
// greater than that of every fenced acquisition of key (read or write) that
// completed before this one began; readers that overlap may share a fence.
// WithFairness does not apply to readers and is ignored. See docs/rwlock.md.
//
// ttl has the range of TryLock's; outside it, or with a key TryLock refuses (empty or reserved), TryRLock
// returns an error without calling a node. The cleanup of a failed attempt
// runs in the background, each node call bounded by the node timeout.
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

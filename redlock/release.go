package redlock

import (
	"context"
	"time"

	"github.com/redlockgo/redlock/internal/fanout"
	"github.com/redlockgo/redlock/internal/lease"
)

// undo releases token, of kind k, on nodes in the background, each call
// bounded by fanout.CallBound(timeout), as the calls it cleans up after
// are, and ordered after this Client's earlier calls on the key: a release
// waiting for an acquisition still in flight on its node outlasts it, and
// nobody waits for the release. keep is as for lease.Kind.Releaser. Close
// waits for it. It serves a failed attempt's cleanup, a straggler and a
// waiter that gives its keys back or leaves.
func (c *Client) undo(k lease.Kind, token string, keep any, nodes []int, timeout time.Duration) {
	c.undoWithin(k, token, keep, nodes, fanout.CallBound(timeout))
}

// undoWithin is undo with each node call, its wait for the calls before it
// in the Client's order included, bounded by bound.
func (c *Client) undoWithin(k lease.Kind, token string, keep any, nodes []int, bound time.Duration) {
	if len(nodes) == 0 {
		return
	}
	slots := k.Enter(&c.env, token, nodes)
	release := k.Releaser(&c.env, token, keep, false)
	c.life.wg.Add(1) // callers run inside a registered operation
	go func() {
		defer c.life.wg.Done()
		c.each(context.Background(), nodes, bound, func(ctx context.Context, i int) (bool, error) {
			return slots[i].Run(ctx, func(ctx context.Context) (bool, error) { return release.Release(ctx, i) })
		})
	}()
}

// release gives l back on every node and returns at the majority. Each
// node hands the key straight to the first waiter in its queue, or, with
// nobody queued, wakes the key's watchers (internal/wait, watch.go).
func (l *Lock) release(ctx context.Context) fanout.Result {
	c := l.c
	keys := l.kind.Watched()
	defer c.waits.Released.Wake(keys)
	slots := l.kind.Enter(&c.env, l.token, nil)
	release := l.kind.Releaser(&c.env, l.token, l.leave, true)
	return c.confirm(context.WithoutCancel(ctx), releaseTimeout(c.nodeTimeout(l.ttl), len(keys)),
		func(ctx context.Context, i int) (bool, error) {
			return slots[i].Run(ctx, func(ctx context.Context) (bool, error) { return release.Release(ctx, i) })
		})
}

// releaseTimeout bounds each node call of an Unlock over n keys: the node
// timeout, and for a multi-lock at least perKeyRelease per key (its script
// deletes every key and hands each to its queue), up to MaxNodeTimeout.
// Waiting longer for a release costs no validity, unlike an acquisition.
func releaseTimeout(timeout time.Duration, n int) time.Duration {
	if n <= 1 {
		return timeout
	}
	return max(timeout, min(time.Duration(n)*perKeyRelease, MaxNodeTimeout))
}

// perKeyRelease is what a multi-lock's release allows per key: about the
// 40µs a key took on a loaded machine at MaxKeys (docs/multilock.md).
const perKeyRelease = 50 * time.Microsecond

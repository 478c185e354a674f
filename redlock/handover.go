package redlock

import (
	"context"
	"fmt"

	"github.com/redlockgo/redlock/internal/fanout"
	"github.com/redlockgo/redlock/internal/scripts"
)

// A hand-over passes a lock from its holder straight to the next waiter of
// the same Client, in one round trip per node instead of two: the holder's
// Unlock runs handover.lua, which deletes the key and, when no other Client
// listens for its release on that node, sets it at once to a new token for
// the waiter. The waiter holds the lock once a majority of the nodes did so
// within the validity counted from the start of the Unlock, exactly as if it
// had sent SET NX to each node at that moment: the key is set only where it
// was just freed, so mutual exclusion rests on the same majority argument as
// an acquisition. Where other Clients wait, the key is left free for
// whoever gets there first, as after a plain release, so a busy process
// cannot starve the others.
//
// Only a waiter parked behind the holder takes part (the head of the
// Client's queue, promoted when the holder got the lock), and only plain
// locks: fair and fenced ones need their own scripts.

// offerNext makes an offer to the head waiter of l's key, or returns nil
// when l must be released the plain way.
func (c *Client) offerNext(l *Lock) *offer {
	if l.fair {
		return nil
	}
	return c.waiters.offerHead(l.key)
}

// handOver releases l and tries to hand the key to the waiter holding o. It
// returns the release's outcome (a vote counts as yes when the node deleted
// l's token), having waited for a majority of those like a plain release;
// the waiter learns its own from o.
func (l *Lock) handOver(ctx context.Context, o *offer) fanout.Result {
	c := l.c
	n := len(c.pools)
	start := c.cfg.clock.Now()
	next := c.newLock(l.key, o.ttl, o.heal, false)
	keys := []string{l.key}
	args := []any{l.token, ReleaseChannel(l.key), c.id, next.token, next.ttl.Milliseconds()}
	codes := make([]int64, n) // each written by its node's goroutine before its vote is sent
	timeout := c.nodeTimeout(l.ttl)
	inflight := c.releases.start(l.key, n)
	decided := make(chan struct{}) // closed once handed is final
	handed := false
	late := make(chan fanout.Vote, n)
	ctx = context.WithoutCancel(ctx)

	// A vote is yes when the node handed the key over; the release itself
	// is counted from codes below.
	res := fanout.Quorum(ctx, &c.wg, n, c.quorum, timeout,
		func(ctx context.Context, i int) (bool, error) {
			defer c.releases.finish(l.key, inflight, i)
			defer next.settle(i)
			if err := l.waitSettled(ctx, i); err != nil {
				return false, err
			}
			r, err := c.pools[i].Eval(ctx, scripts.Handover, keys, args...)
			if err != nil {
				return false, err
			}
			codes[i] = asInt(r)
			return codes[i] == scripts.HandoverHanded, nil
		},
		func(v fanout.Vote, _ bool) {
			late <- v // buffered: one slot per node
			<-decided
			if !handed && (v.OK || v.Err != nil) {
				c.releaseNode(ctx, timeout, v.Node, l.key, next.token)
			}
		})

	until := start.Add(next.ttl - c.drift(next.ttl))
	handed = res.Reached && c.cfg.clock.Now().Before(until)
	if handed {
		next.until = until
	}
	close(decided)

	// The release: as many of the node answers as a plain release would
	// wait for, some of them possibly from stragglers of the hand-over.
	rel := fanout.Result{Votes: make([]fanout.Vote, 0, n)}
	count := func(v fanout.Vote) {
		v.OK = v.Err == nil && codes[v.Node] >= scripts.HandoverReleased
		rel.Votes = append(rel.Votes, v)
		if v.OK {
			rel.Yes++
		}
	}
	for _, v := range res.Votes {
		count(v)
	}
	for pending := n - len(res.Votes); rel.Yes < c.quorum && rel.Yes+pending >= c.quorum; pending-- {
		count(<-late)
	}
	rel.Reached = rel.Yes >= c.quorum

	if handed {
		o.lock = next
	} else {
		// Remove the waiter's token wherever it may have been set; a
		// straggler removes its own. Then the waiter tries the usual way.
		var dirty []int
		for _, v := range res.Votes {
			if v.OK || v.Err != nil {
				dirty = append(dirty, v.Node)
			}
		}
		fanout.Each(ctx, &c.wg, dirty, timeout, func(ctx context.Context, i int) (bool, error) {
			return c.release(ctx, i, []string{l.key}, next.token)
		})
		qe := c.quorumError("lock", ErrNotObtained, res)
		if res.Reached {
			qe.Reason = fmt.Sprintf("validity used up after %v", c.cfg.clock.Since(start))
		}
		o.err = qe
	}
	close(o.done)
	c.waiters.wakeHead(l.key)
	return rel
}

package redlock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redlockgo/redlock/internal/fanout"
	"github.com/redlockgo/redlock/internal/scripts"
)

// leaseKind is how a Lock that is one lease among several on its key (a
// reader, a permit) acts on a node, in place of the exclusive lock's SET NX
// and scripts. A nil leaseKind is the exclusive lock.
type leaseKind interface {
	// take acquires the lease for token on node i of c. It returns whether
	// it did, the place taken (the permit's slot; "" for a reader) and the
	// fence counter read in the same step. heal asks for exactly the
	// lease's place, ignoring waiting writers. When refused, it registers w.
	take(ctx context.Context, c *Client, i int, token string, ttl time.Duration, heal bool, w nodeWatch) (ok bool, place string, counter uint64, err error)
	// extend runs the kind's extend script on node i of c, with
	// scripts.Extend's codes.
	extend(ctx context.Context, c *Client, i int, token string, ttl time.Duration) (int64, error)
	// release ends the lease for token on node i of c; it reports whether
	// it was live. A key it hands to a waiter of c is delivered to it. With
	// wake (an Unlock), a key it leaves free wakes its watchers.
	release(ctx context.Context, c *Client, i int, token string, wake bool) (bool, error)
	// raiseFence raises the fence counter on node i of c to fence while the
	// lease is live.
	raiseFence(ctx context.Context, c *Client, i int, token, fence string) (bool, error)
	// attempt returns the kind for a new attempt (a permit's starting slot).
	attempt() leaseKind
	// placed returns the kind for a lease agreed on place.
	placed(place string) leaseKind
}

// extendOn runs l's extend script on node i and returns its code.
func (l *Lock) extendOn(ctx context.Context, i int, ttl time.Duration) (int64, error) {
	p := l.c.pools[i]
	switch {
	case l.kind != nil:
		return l.kind.extend(ctx, l.c, i, l.token, ttl)
	case l.keys != nil:
		return l.extendAllOn(ctx, i, ttl)
	}
	c := l.c
	keys := c.withHeld([]string{l.key}, i, l.key)
	r, err := p.Eval(ctx, scripts.Extend, keys, c.withDelay([]any{l.token, ttl.Milliseconds()})...)
	return asInt(r), err
}

// releaseOn releases l on node i in its slot of the Client's order; keys
// and args are Release's, for the exclusive lock (see Client.release).
func (l *Lock) releaseOn(ctx context.Context, s slot, i int, keys []string, args []any) (bool, error) {
	if l.kind == nil {
		return l.c.release(ctx, s, i, keys, args)
	}
	return s.run(ctx, func(ctx context.Context) (bool, error) {
		return l.kind.release(ctx, l.c, i, l.token, true)
	})
}

// healOn sets l again on node i, where it is missing.
func (l *Lock) healOn(ctx context.Context, i int, ttl time.Duration) (bool, error) {
	switch {
	case l.keys != nil:
		return l.healAllOn(ctx, i, ttl)
	case l.kind == nil && l.c.cfg.lockDelay > 0:
		return l.c.setDelayed(ctx, i, l.key, l.token, ttl) // our own marker does not refuse
	case l.kind == nil:
		return l.c.pools[i].SetNX(ctx, l.key, l.token, ttl)
	}
	ok, _, _, err := l.kind.take(ctx, l.c, i, l.token, ttl, true, nodeWatch{})
	return ok, err
}

// raiseFenceOn is phase 2 of fencing on node i: see raiseFence.
func (l *Lock) raiseFenceOn(ctx context.Context, i int, fence string) (bool, error) {
	p := l.c.pools[i]
	switch {
	case l.kind != nil:
		return l.kind.raiseFence(ctx, l.c, i, l.token, fence)
	case l.keys != nil:
		return l.raiseFenceAllOn(ctx, i, fence)
	}
	r, err := p.Eval(ctx, scripts.FenceRaise, []string{l.key, l.c.fenceKey(i, l.key)}, l.token, fence)
	return asInt(r) == 1, err
}

// acquireLease is one attempt at a lease of kind on key, as acquire is for
// the exclusive lock: the kind's take on every node in parallel, a decision
// at the majority, validity checked on the Client's clock, and the release
// of the attempt wherever it may have landed when it fails. Nodes must agree
// on the place (a permit's slot): the decision waits for a majority on one
// place, or until none can have it; a node that took another place is
// released at once. w registers the Client as a watcher of the key where
// it is refused (nil: nowhere).
func (c *Client) acquireLease(ctx context.Context, key string, ttl time.Duration, lc lockConfig, kind leaseKind, w *watching) (*Lock, error) {
	kind = kind.attempt()
	l := c.newLock(key, newToken(), ttl, lc.heal)
	timeout := c.nodeTimeout(ttl)
	places := make([]string, len(c.pools))   // each written only by its node's goroutine
	counters := make([]uint64, len(c.pools)) // fence counters read with the take
	decided := make(chan struct{})           // closed once place and failed are final
	place, failed := "", false
	start := c.cfg.clock.Now()

	slots := c.order.takeAll(key, l.token, true, nil, len(c.pools))
	res := c.decide(ctx, timeout, contendedGrace(timeout),
		func(ctx context.Context, i int) (bool, error) {
			return slots[i].run(ctx, func(ctx context.Context) (ok bool, err error) {
				ok, places[i], counters[i], err = kind.take(ctx, c, i, l.token, ttl, false, w.on(c, i, key))
				return ok, err
			})
		},
		func(v fanout.Vote, _ bool) {
			// A straggler: part of the lease only if the attempt succeeded
			// and it took the agreed place; otherwise release it here.
			<-decided
			if stray(v, failed, places[v.Node], place) {
				c.releaseLeaseAsync(l, kind, []int{v.Node}, timeout)
			}
		},
		func(i int) string { return places[i] })

	place, agreed := agreedPlace(res, places)
	l.kind = kind.placed(place)
	votes := agreedVotes(res, places, place)
	held, fenceErr := c.holds(ctx, l, agreed >= c.quorum, votes, counters, lc, start, timeout)
	failed = !held
	close(decided)

	var dirty []int // nodes that may hold the attempt but are not part of the lease
	for _, v := range res.Votes {
		if stray(v, failed, places[v.Node], place) {
			dirty = append(dirty, v.Node)
		}
	}
	c.releaseLeaseAsync(l, kind, dirty, timeout)
	if held {
		return l, nil
	}
	if fenceErr != nil {
		return nil, fenceErr
	}
	qe := c.notObtained(votes, agreed >= c.quorum, start)
	if agreed < c.quorum && res.Yes >= c.quorum {
		qe.Reason = "nodes took different permits"
	}
	return nil, qe
}

// stray reports whether the attempt may have landed on v's node without
// being part of the lease: the attempt failed, the node took another place,
// or its answer is unknown and places matter (a permit's slot).
func stray(v fanout.Vote, failed bool, took, place string) bool {
	switch {
	case v.OK:
		return failed || took != place
	case v.Err != nil:
		return failed || place != ""
	}
	return false
}

// agreedPlace returns the place taken by most of the nodes that said yes,
// and how many took it.
func agreedPlace(res fanout.Result, places []string) (string, int) {
	count := make(map[string]int, 1)
	best, n := "", 0
	for _, v := range res.Votes {
		if !v.OK {
			continue
		}
		p := places[v.Node]
		count[p]++
		if count[p] > n {
			best, n = p, count[p]
		}
	}
	return best, n
}

// agreedVotes is res with a yes only from the nodes that took place: the
// others are not part of the lease.
func agreedVotes(res fanout.Result, places []string, place string) fanout.Result {
	out := fanout.Result{Votes: make([]fanout.Vote, len(res.Votes))}
	for k, v := range res.Votes {
		if v.OK && places[v.Node] != place {
			v.OK = false
		}
		if v.OK {
			out.Yes++
		}
		out.Votes[k] = v
	}
	out.Reached = res.Reached && out.Yes == res.Yes
	return out
}

// releaseLeaseAsync ends an attempt's lease on nodes in the background, each
// call bounded by timeout and ordered after this Client's earlier calls on
// the key. Close waits for it.
func (c *Client) releaseLeaseAsync(l *Lock, kind leaseKind, nodes []int, timeout time.Duration) {
	if len(nodes) == 0 {
		return
	}
	slots := c.order.takeAll(l.key, l.token, true, nodes, len(c.pools))
	c.wg.Add(1) // callers run inside a registered operation
	go func() {
		defer c.wg.Done()
		fanout.Each(context.Background(), &c.wg, nodes, timeout, func(ctx context.Context, i int) (bool, error) {
			return slots[i].run(ctx, func(ctx context.Context) (bool, error) {
				return kind.release(ctx, c, i, l.token, false)
			})
		})
	}()
}

// obtainLease is TryRLock and TryAcquirePermit after their own checks: one
// attempt, or, when wait is set, attempts paced by the retry strategy until
// one succeeds, the strategy stops, ctx ends or the Client closes; a
// release that leaves the key free cuts the pause short (watch.go).
func (c *Client) obtainLease(ctx context.Context, key string, ttl time.Duration, lc lockConfig, kind leaseKind, wait bool) (*Lock, error) {
	start := c.cfg.clock.Now()
	ttl = ttl.Truncate(time.Millisecond)
	var woken <-chan struct{}
	var channels []string
	if wait {
		var stop func()
		woken, channels, stop = c.startWatching([]string{key})
		defer stop()
	}
	var prev error // the error of the last attempt that ran to its decision
	for attempt := 1; ; attempt++ {
		var delay time.Duration
		retry := false
		if wait {
			// Asked before the attempt: an attempt followed by a pause
			// watches for the key's release, for that long.
			delay, retry = lc.retry.NextDelay(attempt)
		}
		l, err := c.acquireLease(ctx, key, ttl, lc, kind, c.watching(channels, retry, delay, ttl))
		err, end := afterAttempt(ctx, err, prev, retry)
		if end {
			return c.obtained(ctx, key, l, err, start, attempt, lc)
		}
		prev = err
		if err := c.pause(ctx, delay, woken, err); err != nil {
			return c.obtained(ctx, key, nil, err, start, attempt, lc)
		}
	}
}

// parseTake reads a take script's reply {1, [place,] counter} or {0, ...}.
func parseTake(v any, withPlace bool) (ok bool, place string, counter uint64, err error) {
	arr, _ := v.([]any)
	if len(arr) == 0 {
		return false, "", 0, errMalformed
	}
	if asInt(arr[0]) != 1 {
		return false, "", 0, nil
	}
	if withPlace {
		if len(arr) < 3 {
			return false, "", 0, errMalformed
		}
		place, _ = arr[1].(string)
		arr = arr[1:]
	}
	if len(arr) < 2 {
		return false, "", 0, errMalformed
	}
	s, _ := arr[1].(string)
	counter, err = strconv.ParseUint(s, 10, 64)
	if err != nil {
		// The lease is ours but the counter is unusable: report the node as
		// failed, so the attempt's cleanup releases it.
		return false, "", 0, fmt.Errorf("redlock: fence counter is not a number: %q", s)
	}
	return true, place, counter, nil
}

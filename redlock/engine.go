package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redlockgo/redlock/internal/fanout"
	"github.com/redlockgo/redlock/internal/node"
	"github.com/redlockgo/redlock/internal/wait"
)

// The engine: one acquisition, one background release and one Unlock for
// every lock kind. A kind (kinds.go: the exclusive lock, a multi-lock; a
// reader, rwlock.go; a permit, permit.go) supplies its scripts and how a
// node's answer counts; the engine does the rest, the same way for each:
// fan out (vote.go judges every answer), decide at the majority, validity
// counted once from the attempt's start, the fence phase, the cleanup of
// every node that may hold the attempt's token, and the stragglers.

// leaseKind is how a lock of one kind acts on a node. Its value is chosen
// once per lock (the options that change a call, such as fencing, are
// fields of it), so no call asks again.
type leaseKind interface {
	// enter takes the places, in the Client's order, of one write per node
	// of nodes (nil: all) for token. The caller runs each slot once.
	enter(c *Client, token string, nodes []int) []node.Slot
	// take acquires the lease for token on node i of c: it reports whether
	// it did and records in t the place taken and the fence counter read in
	// the same step. heal asks for exactly the lease's place, ignoring
	// waiting writers. When refused, it registers w, and names in t.held
	// the key it found held when it knows it.
	take(ctx context.Context, c *Client, i int, token string, ttl time.Duration, heal bool, w nodeWatch, t *nodeTake) (bool, error)
	// extend runs the kind's extend script on node i of c, with
	// scripts.Extend's codes.
	extend(ctx context.Context, c *Client, i int, token string, ttl time.Duration) (int64, error)
	// releaser returns the release of token, for any node: it reports
	// whether the node held the lease. keep is how long, in ms, an
	// exclusive lock's token may not queue again ("": no bound). With wake
	// (an Unlock), a key it leaves free wakes its watchers. A key it hands
	// to a waiter of c is delivered to it.
	releaser(c *Client, token string, keep any, wake bool) releaseCall
	// raiseFence raises the fence counter on node i of c to fence while the
	// lease is live.
	raiseFence(ctx context.Context, c *Client, i int, token, fence string) (bool, error)
	// watched returns the keys a blocked attempt watches and an Unlock
	// wakes.
	watched() []string
	// places reports whether nodes must agree on a place (a permit's slot).
	places() bool
	// attempt returns the kind for a new attempt (a permit's starting slot).
	attempt() leaseKind
	// placed returns the kind for a lease agreed on place.
	placed(place string) leaseKind
}

// releaseCall is one release of a token, built once for every node.
type releaseCall interface {
	release(ctx context.Context, i int) (bool, error)
}

// releaseFunc adapts a function to releaseCall.
type releaseFunc func(ctx context.Context, i int) (bool, error)

func (f releaseFunc) release(ctx context.Context, i int) (bool, error) { return f(ctx, i) }

// nodeTake is what a take learned on one node.
type nodeTake struct {
	place   string // the place taken (a permit's slot); "" for kinds without places
	counter uint64 // the fence counter read with the take
	held    string // on a refusal, the key found held, when the kind knows it
}

// attempt is one acquisition of l's kind k: the take on every node in
// parallel, a decision at the majority (on one place, for a kind with
// places), validity checked on the Client's clock, fenced when lc asks for
// it, and the release of the attempt wherever it may have landed without
// being part of the lock. Each attempt has its own token (l's), so a
// cleanup still running in the background never removes a later attempt's
// lock. w registers the Client as a watcher where the take is refused (nil:
// nowhere). ttl (l's) is in whole milliseconds.
func (c *Client) attempt(ctx context.Context, l *Lock, k leaseKind, lc lockConfig, w *wait.Watch) (*Lock, error) {
	k = k.attempt()
	timeout := c.nodeTimeout(l.ttl)
	st := &attemptState{decided: make(chan struct{})}
	takes := st.takesFor(c.nodes.Len())
	var placeOf func(int) string
	if k.places() {
		placeOf = func(i int) string { return takes[i].place }
	}
	start := c.cfg.clock.Now()

	slots := k.enter(c, l.token, nil)
	res := c.decide(ctx, l.key, timeout, contendedGrace(timeout),
		func(ctx context.Context, i int) (bool, error) {
			return slots[i].Run(ctx, func(ctx context.Context) (bool, error) {
				return k.take(ctx, c, i, l.token, l.ttl, false, c.watchOn(w, i, k), &takes[i])
			})
		},
		func(v fanout.Vote, _ bool) {
			// A straggler: part of the lock only if the attempt succeeded
			// (on the agreed place); otherwise it was released at the
			// decision, below.
			<-st.decided
			if !st.failed && stray(v, false, takes[v.Node].place, st.place) {
				c.undo(k, l.token, "", []int{v.Node}, timeout)
			}
		}, placeOf)

	place, agreed := agreedPlace(res, takes)
	l.kind = k.placed(place)
	votes := agreedVotes(res, takes, place)
	held, fenceErr := c.holds(ctx, l, res.Reached && agreed >= c.nodes.Quorum(), votes, takes, lc, start, timeout)
	st.place, st.failed = place, !held
	close(st.decided)

	// The release of a node still working on the take waits for it first
	// (the Client's order): both fit in two call bounds from the start, the
	// cleanup's share of Close's bound.
	bound := max(2*fanout.CallBound(timeout)-c.cfg.clock.Since(start), fanout.CallBound(timeout))
	c.undoWithin(k, l.token, "", c.dirty(res, takes, place, st.failed), bound)
	switch {
	case held:
		return l, nil
	case fenceErr != nil:
		return nil, fenceErr
	}
	return nil, c.refused(res, votes, agreed, takes, start)
}

// attemptState is what an attempt shares with its stragglers, in one
// allocation: the decision, final once decided is closed, and the nodes'
// takes (each written only by its node's goroutine).
type attemptState struct {
	decided chan struct{}
	place   string // the agreed place
	failed  bool
	small   [7]nodeTake // takes, for up to 7 nodes
}

// takesFor returns the takes of n nodes.
func (s *attemptState) takesFor(n int) []nodeTake {
	if n <= len(s.small) {
		return s.small[:n]
	}
	return make([]nodeTake, n)
}

// contendedGrace is how long an acquisition that found the key held on some
// node still waits for the nodes that have not answered (fanout.QuorumOn):
// as long as a waiter waits at most for missing grants (waiter.check). A
// grace scaled to the first answer's time (tried) cut off nodes that had to
// reconnect, after a restart, in a millisecond. A silent node
// would otherwise hold every contended attempt for the node timeout, and
// with it the nodes the attempt took from the waiters queued there.
func contendedGrace(timeout time.Duration) time.Duration {
	return max(min(timeout/4, 50*time.Millisecond), time.Millisecond)
}

// holds decides an attempt on lock l that started at start: it holds when
// a majority agreed (reached) and validity is left, fenced first when lc
// asks for it (votes are the nodes that count for the fence, takes the
// counters they read). It sets l's validity and fence; err is the fence's
// failure.
func (c *Client) holds(ctx context.Context, l *Lock, reached bool, votes fanout.Result, takes []nodeTake, lc lockConfig, start time.Time, timeout time.Duration) (bool, error) {
	until := start.Add(l.ttl - c.drift(l.ttl))
	if !reached || !c.cfg.clock.Now().Before(until) {
		return false, nil
	}
	if lc.fencing {
		fence, err := c.raiseFence(ctx, l, votes, takes, timeout)
		if err != nil {
			return false, err
		}
		l.fence = fence
		if !c.cfg.clock.Now().Before(until) {
			return false, nil
		}
	}
	l.until = until
	return true, nil
}

// refused is the error of an attempt that did not hold: its votes (those
// of the agreed place) and, when a majority agreed, the validity it used
// up; a node that found a key held names it.
func (c *Client) refused(res, votes fanout.Result, agreed int, takes []nodeTake, start time.Time) *QuorumError {
	qe := c.notObtained(votes, agreed >= c.nodes.Quorum(), start)
	if agreed < c.nodes.Quorum() && res.Yes >= c.nodes.Quorum() {
		qe.Reason = "nodes took different permits (for an owner: a first hold on some, a re-entry on others)"
	}
	for _, n := range qe.Nodes {
		// Only a node that answered no is read: a straggler still writes
		// its take.
		if errors.Is(n.Err, ErrTaken) && takes[n.Node].held != "" {
			n.Err = fmt.Errorf("%w: key %q", ErrTaken, takes[n.Node].held)
		}
	}
	return qe
}

// notObtained is the error of an attempt that did not hold: its votes and,
// when a majority agreed (reached), the validity it used up.
func (c *Client) notObtained(res fanout.Result, reached bool, start time.Time) *QuorumError {
	qe := c.quorumError("lock", ErrNotObtained, res)
	if reached {
		qe.Reason = fmt.Sprintf("validity used up after %v", c.cfg.clock.Since(start))
	}
	return qe
}

// stray reports whether the attempt may have landed on v's node without
// being part of the lock: the attempt failed, the node took another place,
// or its answer is unknown and places matter (a permit's slot). A refusal
// for the lock-delay or another kind is known: nothing was set.
func stray(v fanout.Vote, failed bool, took, place string) bool {
	switch {
	case v.OK:
		return failed || took != place
	case v.Err != nil && !isKnownRefusal(v.Err):
		return failed || place != ""
	}
	return false
}

// dirty returns the nodes that may hold a decided attempt without being
// part of its lock. For a failed attempt these include every node that had
// not answered (a straggler): its release is entered now, in the Client's
// order of calls on the key (internal/node/order.go), behind the attempt's
// own take there and ahead of any later attempt's. So a later attempt of
// this Client never finds this one's key and reads it as contention (it
// did when the release was entered only once the straggler answered).
func (c *Client) dirty(res fanout.Result, takes []nodeTake, place string, failed bool) []int {
	var out []int
	for _, v := range res.Votes {
		if stray(v, failed, takes[v.Node].place, place) {
			out = append(out, v.Node)
		}
	}
	if !failed || len(res.Votes) == c.nodes.Len() {
		return out
	}
	voted := make([]bool, c.nodes.Len())
	for _, v := range res.Votes {
		voted[v.Node] = true
	}
	for i, ok := range voted {
		if !ok {
			out = append(out, i)
		}
	}
	return out
}

// agreedPlace returns the place taken by most of the nodes that said yes,
// and how many took it.
func agreedPlace(res fanout.Result, takes []nodeTake) (string, int) {
	best, n := "", 0
	var count map[string]int
	for _, v := range res.Votes {
		if !v.OK {
			continue
		}
		p := takes[v.Node].place
		if p == "" {
			n++ // kinds without places all agree
			continue
		}
		if count == nil {
			count = make(map[string]int, 1)
		}
		count[p]++
		if count[p] > n {
			best, n = p, count[p]
		}
	}
	return best, n
}

// agreedVotes is res with a yes only from the nodes that took place: the
// others are not part of the lock. For a kind without places it is res.
func agreedVotes(res fanout.Result, takes []nodeTake, place string) fanout.Result {
	if place == "" {
		return res
	}
	out := fanout.Result{Votes: make([]fanout.Vote, len(res.Votes)), Expired: res.Expired}
	for k, v := range res.Votes {
		if v.OK && takes[v.Node].place != place {
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

// undo releases token, of kind k, on nodes in the background, each call
// bounded by fanout.CallBound(timeout), as the calls it cleans up after
// are, and ordered after this Client's earlier calls on the key: a release
// waiting for an acquisition still in flight on its node outlasts it, and
// nobody waits for the release. keep is as for leaseKind.releaser. Close
// waits for it. It serves a failed attempt's cleanup, a straggler and a
// waiter that gives its keys back or leaves.
func (c *Client) undo(k leaseKind, token string, keep any, nodes []int, timeout time.Duration) {
	c.undoWithin(k, token, keep, nodes, fanout.CallBound(timeout))
}

// undoWithin is undo with each node call, its wait for the calls before it
// in the Client's order included, bounded by bound.
func (c *Client) undoWithin(k leaseKind, token string, keep any, nodes []int, bound time.Duration) {
	if len(nodes) == 0 {
		return
	}
	slots := k.enter(c, token, nodes)
	release := k.releaser(c, token, keep, false)
	c.life.wg.Add(1) // callers run inside a registered operation
	go func() {
		defer c.life.wg.Done()
		c.each(context.Background(), nodes, bound, func(ctx context.Context, i int) (bool, error) {
			return slots[i].Run(ctx, func(ctx context.Context) (bool, error) { return release.release(ctx, i) })
		})
	}()
}

// release gives l back on every node and returns at the majority. Each
// node hands the key straight to the first waiter in its queue, or, with
// nobody queued, wakes the key's watchers (internal/wait, watch.go).
func (l *Lock) release(ctx context.Context) fanout.Result {
	c := l.c
	keys := l.kind.watched()
	defer c.waits.Released.Wake(keys)
	slots := l.kind.enter(c, l.token, nil)
	release := l.kind.releaser(c, l.token, l.leave, true)
	return c.confirm(context.WithoutCancel(ctx), releaseTimeout(c.nodeTimeout(l.ttl), len(keys)),
		func(ctx context.Context, i int) (bool, error) {
			return slots[i].Run(ctx, func(ctx context.Context) (bool, error) { return release.release(ctx, i) })
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

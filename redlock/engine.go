package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redlockgo/redlock/internal/fanout"
	"github.com/redlockgo/redlock/internal/lease"
	"github.com/redlockgo/redlock/internal/node"
	"github.com/redlockgo/redlock/internal/wait"
)

// The engine: one acquisition path for every lock kind. An entry point
// builds a request; acquire prepares it (request.go), runs its strategy
// (strategy.go: one try, retries, the queue, or a resumed hold), whose
// every way to a hold ends in hold (hold.go: validity, fence), and leaves
// through obtained, the one exit. An attempt is the one fan-out that takes
// a lease: decided at the majority (vote.go judges every answer), validity
// counted once from its start, and the cleanup of every node that may hold
// its token. A kind (internal/lease) supplies only its scripts and how a
// node's answer counts.

// acquire is every acquisition: r prepared, its strategy run, and the
// outcome reported by obtained.
func (c *Client) acquire(ctx context.Context, r request) (*Lock, error) {
	done, err := c.begin()
	if err != nil {
		return nil, err
	}
	defer done()
	p, err := c.prepare(ctx, r)
	if err != nil {
		return nil, err
	}
	l, attempts, err := c.run(ctx, &p)
	return c.obtained(ctx, &p, l, attempts, err)
}

// obtained is the one exit of an acquisition: it reports the outcome to
// the observers and, for a lock, records it for Shutdown and starts its
// keeper WithAutoExtend.
func (c *Client) obtained(ctx context.Context, p *plan, l *Lock, attempts int, err error) (*Lock, error) {
	e := Event{Kind: Acquired, Key: p.key, Start: p.start, Duration: c.cfg.clock.Since(p.start), Attempts: attempts, Err: err}
	if err != nil {
		e.Kind = NotObtained
		c.emit(ctx, e)
		return nil, err
	}
	l.acquiredAt = c.cfg.clock.Now()
	c.life.held.add(l, l.acquiredAt)
	e.Fence = l.fence
	c.emit(ctx, e)
	if p.lc.autoExtend {
		l.startKeeper(p.lc)
	}
	return l, nil
}

// newLock returns a Lock of p's kind for token, not yet holding. An
// exclusive lock keeps its kind in the Lock (no allocation of its own).
func (c *Client) newLock(p *plan, token string) *Lock {
	l := &Lock{c: c, key: p.key, token: token, ttl: p.lc.ttl, heal: p.lc.heal, leave: ""}
	if p.kind == nil {
		l.ex = p.ex
		l.kind = &l.ex
	} else {
		l.kind = p.kind
	}
	return l
}

// newToken returns a new token for an attempt of p's kind.
func (p *plan) newToken() string {
	if p.kind != nil {
		return p.kind.Token()
	}
	return lease.NewToken()
}

// attempt is one acquisition of p's kind: the take on every node in
// parallel, a decision at the majority (on one place, for a kind with
// places), and hold; then the release of the attempt wherever it may have
// landed without being part of the lock. Each attempt has its own token,
// so a cleanup still running in the background never removes a later
// attempt's lock. w registers the Client as a watcher where the take is
// refused (nil: nowhere).
func (c *Client) attempt(ctx context.Context, p *plan, w *wait.Watch) (*Lock, error) {
	l := c.newLock(p, p.newToken())
	k := l.kind.Attempt()
	timeout := c.nodeTimeout(l.ttl)
	st := &attemptState{decided: make(chan struct{})}
	takes := st.takesFor(c.nodes.Len())
	var placeOf func(int) string
	if k.Places() {
		placeOf = func(i int) string { return takes[i].Place }
	}
	start := c.cfg.clock.Now()

	slots := k.Enter(&c.env, l.token, nil)
	res := c.decide(ctx, l.key, timeout, contendedGrace(timeout),
		func(ctx context.Context, i int) (bool, error) {
			return slots[i].Run(ctx, func(ctx context.Context) (bool, error) {
				return k.Take(ctx, &c.env, i, l.token, l.ttl, false, c.watchOn(w, i, k), &takes[i])
			})
		},
		func(v fanout.Vote, _ bool) {
			// A straggler: part of the lock only if the attempt succeeded
			// (on the agreed place); otherwise it was released at the
			// decision, below.
			<-st.decided
			if !st.failed && stray(v, false, takes[v.Node].Place, st.place) {
				c.undo(k, l.token, "", []int{v.Node}, timeout)
			}
		}, placeOf)

	place, agreed := agreedPlace(res, takes)
	l.kind = k.Placed(place)
	votes := agreedVotes(res, takes, place)
	held, fenceErr := false, error(nil)
	if res.Reached && agreed >= c.nodes.Quorum() {
		held, fenceErr = c.hold(ctx, l, claim{until: start.Add(l.ttl - c.drift(l.ttl)), votes: votes, takes: takes}, p.lc)
	}
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
	small   [7]lease.Take // takes, for up to 7 nodes
}

// takesFor returns the takes of n nodes.
func (s *attemptState) takesFor(n int) []lease.Take {
	if n <= len(s.small) {
		return s.small[:n]
	}
	return make([]lease.Take, n)
}

// watchOn returns w's registration on node i for the keys kind watches
// (wait.Watch.On): nothing for a nil w, or where the node cannot be
// listened to; and the lease of a waiting multi-lock's place in the
// queues (wait.Watch.Queue: 0 for a nil w, no attempt follows).
func (c *Client) watchOn(w *wait.Watch, i int, kind lease.Kind) lease.Watch {
	queue := w.Queue().Milliseconds()
	ch, ms, ok := w.On(i)
	if !ok {
		return lease.Watch{Queue: queue}
	}
	return lease.Watch{Keys: c.env.WatchKeys(i, kind.Watched()), Channel: ch, Lease: ms, Queue: queue}
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

// refused is the error of an attempt that did not hold: its votes (those
// of the agreed place) and, when a majority agreed, the validity it used
// up; a node that found a key held names it.
func (c *Client) refused(res, votes fanout.Result, agreed int, takes []lease.Take, start time.Time) *QuorumError {
	qe := c.quorumError("lock", ErrNotObtained, votes)
	if agreed >= c.nodes.Quorum() {
		qe.Reason = fmt.Sprintf("validity used up after %v", c.cfg.clock.Since(start))
	}
	if agreed < c.nodes.Quorum() && res.Yes >= c.nodes.Quorum() {
		qe.Reason = "nodes took different permits (for an owner: a first hold on some, a re-entry on others)"
	}
	for _, n := range qe.Nodes {
		// Only a node that answered no is read: a straggler still writes
		// its take.
		if errors.Is(n.Err, ErrTaken) && takes[n.Node].Held != "" {
			held := fmt.Errorf("%w: key %q", ErrTaken, takes[n.Node].Held)
			var same *node.SameServerError
			if errors.As(n.Err, &same) {
				same.Answer = held // a refusal that does not count (node.Set.Refused)
			} else {
				n.Err = held
			}
		}
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
	case v.Err != nil && !lease.IsKnownRefusal(v.Err):
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
func (c *Client) dirty(res fanout.Result, takes []lease.Take, place string, failed bool) []int {
	var out []int
	for _, v := range res.Votes {
		if stray(v, failed, takes[v.Node].Place, place) {
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
func agreedPlace(res fanout.Result, takes []lease.Take) (string, int) {
	best, n := "", 0
	var count map[string]int
	for _, v := range res.Votes {
		if !v.OK {
			continue
		}
		p := takes[v.Node].Place
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
func agreedVotes(res fanout.Result, takes []lease.Take, place string) fanout.Result {
	if place == "" {
		return res
	}
	out := fanout.Result{Votes: make([]fanout.Vote, len(res.Votes)), Expired: res.Expired}
	for k, v := range res.Votes {
		if v.OK && takes[v.Node].Place != place {
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

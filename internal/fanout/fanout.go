// Package fanout sends one operation to every node in parallel and decides at
// a quorum, without waiting for the slowest node.
package fanout

import (
	"context"
	"sync"
	"time"
)

// Vote is one node's answer. OK is a yes; a nil Err with OK false is an
// explicit no; a non-nil Err means the outcome on that node is unknown.
type Vote struct {
	Node int
	OK   bool
	Err  error
}

// Result is what Quorum saw up to its decision.
type Result struct {
	// Reached reports whether Need nodes voted yes.
	Reached bool
	// Yes counts the yes votes in Votes.
	Yes int
	// Votes holds the answers that arrived before the decision, in arrival
	// order. Nodes missing from it are stragglers: their answers go to the
	// late callback.
	Votes []Vote
	// Expired reports that the decision came at the node timeout: the
	// nodes missing from Votes had not answered within it.
	Expired bool
}

// Op is the operation run on one node, under ctx bounded by CallBound of
// the node timeout.
type Op func(ctx context.Context, node int) (bool, error)

// Late receives a straggler's vote, in the straggler's own goroutine, after
// the decision. reached is the decision.
type Late func(v Vote, reached bool)

// Linger is how many node timeouts a node call of Quorum, QuorumOn and
// Decide may run: the decision counts a node that has not answered within
// the node timeout as failed, and its call goes on to CallBound. A call cut
// by its deadline costs its connection (go-redis closes a connection whose
// read a deadline interrupted), and where setting up a new one takes longer
// than the node timeout (TLS, a proxy, a loaded host), cutting every call at
// the node timeout would leave a Client dialling for ever. Letting the call
// finish keeps the connection; the decision does not wait for it.
const Linger = 4

// CallBound is how long a node call of a fan-out decided at timeout may
// run: Linger times timeout.
func CallBound(timeout time.Duration) time.Duration { return Linger * timeout }

// Quorum runs op on nodes 0..n-1 concurrently and returns as soon as need
// nodes said yes or need can no longer be reached, once timeout has passed
// (the nodes that have not answered then count as failed), or when ctx
// ends. Each call is bounded by CallBound(timeout) (one deadline shared by
// all, derived from ctx). It never waits for a node once the outcome is
// decided; a node that answers afterwards is handed to late (which may be
// nil).
//
// Every node call runs through r (Runner.Go), which counts it before
// Quorum returns; each ends within CallBound(timeout) plus the time late
// takes, so r's owner can wait for them.
func Quorum(ctx context.Context, r Runner, n, need int, timeout time.Duration, op Op, late Late) Result {
	return QuorumOn(ctx, r, n, need, timeout, 0, op, late, nil)
}

// QuorumOn is Quorum for yes votes that must agree on a place (a permit's
// slot): place(node) names the place a node said yes for, read once its op
// has returned, and the decision comes as soon as need nodes said yes for
// one place, or no place can reach need any more. Result.Reached reports the
// former; Result.Yes still counts every yes. A nil place is Quorum.
//
// A positive grace bounds the wait on a contended outcome: once a node said
// an explicit no (the resource is held elsewhere) and the decision still
// hangs on nodes that have not answered, it waits at most grace more for
// them (and never past timeout), then decides as if they said no. Without
// it one silent node holds every contended attempt, and the nodes it did
// take from everyone else, for the whole node timeout. Giving up is always
// safe: the stragglers' answers go to late as usual.
func QuorumOn(ctx context.Context, r Runner, n, need int, timeout, grace time.Duration, op Op, late Late, place func(node int) string) Result {
	return Decide(ctx, r, n, need, timeout, grace, op, nil, late, place)
}

// Judge may overrule a node's answer before it counts. It runs in the
// node's goroutine right after op returned, under op's ctx, for every
// answer, the stragglers' included.
type Judge func(ctx context.Context, node int, ok bool, err error) (bool, error)

// Decide is QuorumOn with every answer passed through judge (nil: taken as
// it is) before it counts or reaches late.
func Decide(ctx context.Context, r Runner, n, need int, timeout, grace time.Duration, op Op, judge Judge, late Late, place func(node int) string) Result {
	// All nodes start together, so one deadline serves them all: one context
	// per fan-out rather than one per node. The last node call to end
	// releases it (and its timer) without waiting for the deadline.
	began := time.Now()
	nctx, cancel := context.WithTimeout(ctx, CallBound(timeout))
	f := &fan{
		cancel:  cancel,
		running: n,
		votes:   make(chan Vote, n), // one slot per node: a send never blocks
	}
	if n == 0 {
		cancel()
	}
	for i := range n {
		r.Go(func() {
			ok, err := op(nctx, i)
			if judge != nil {
				ok, err = judge(nctx, i, ok, err)
			}
			v := Vote{Node: i, OK: ok, Err: err}
			if d, reached := f.send(v); d && late != nil {
				late(v, reached)
			}
		})
	}
	res := Result{Votes: f.votesFor(n)}
	t := tally{place: place}
	collect(ctx, f.votes, &res, &t, n, need, began, timeout, grace)
	f.decide(&res, &t, need)
	return res
}

// fan is what a fan-out's node calls share with its decision, in one
// allocation. Guarded by mu.
type fan struct {
	mu      sync.Mutex
	cancel  context.CancelFunc
	running int  // node calls not ended yet
	decided bool // the outcome is final: answers go to late
	reached bool
	votes   chan Vote
	small   [7]Vote // Result.Votes, for up to 7 nodes
}

// votesFor returns room for the votes of n nodes.
func (f *fan) votesFor(n int) []Vote {
	if n <= len(f.small) {
		return f.small[:0:n]
	}
	return make([]Vote, 0, n)
}

// send ends a node call with v: before the decision it goes to the
// decision, after it the caller hands it to late (decided is true). The
// last call to end releases the fan-out's context.
func (f *fan) send(v Vote) (decided, reached bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running--; f.running == 0 {
		f.cancel()
	}
	if !f.decided {
		f.votes <- v
	}
	return f.decided, f.reached
}

// decide makes the outcome final, in res. Votes sent before it are ours
// to count and report, not late's: one that was in the buffer when the
// node timeout or the grace ran out still counts. None is sent after it.
func (f *fan) decide(res *Result, t *tally, need int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.votes) > 0 {
		v := <-f.votes
		res.add(v)
		t.add(v)
	}
	f.decided, f.reached = true, t.best >= need
	res.Reached = f.reached
}

// collect adds votes to res and t until need is reached or can no longer
// be, ctx ends, timeout has passed since began, or grace has passed since
// the first explicit no (when grace is positive): the nodes still silent
// then count as failed. One timer serves both bounds.
func collect(ctx context.Context, votes <-chan Vote, res *Result, t *tally, n, need int, began time.Time, timeout, grace time.Duration) {
	if t.best >= need || t.best+n < need {
		return // nothing to wait for (no nodes): no timer
	}
	bound := time.NewTimer(timeout - time.Since(began))
	defer bound.Stop()
	contended, graced := false, false
	for t.best < need && t.best+n-len(res.Votes) >= need {
		select {
		case v := <-votes:
			res.add(v)
			t.add(v)
			if !contended && grace > 0 && !v.OK && v.Err == nil {
				contended = true
				if grace < timeout-time.Since(began) {
					bound.Reset(grace)
					graced = true
				}
			}
		case <-bound.C:
			res.Expired = !graced
			return
		case <-ctx.Done():
			// Node calls derive from ctx and are ending too. A ctx that
			// ended with the node timeout past (both ready at once, or the
			// timer's goroutine late) is an expiry all the same.
			res.Expired = !graced && time.Since(began) >= timeout
			return
		}
	}
}

// tally counts the yes votes per place; best is the most for one place.
type tally struct {
	place func(node int) string
	count map[string]int
	best  int
}

func (t *tally) add(v Vote) {
	if !v.OK {
		return
	}
	if t.place == nil {
		t.best++
		return
	}
	if t.count == nil {
		t.count = make(map[string]int)
	}
	p := t.place(v.Node)
	t.count[p]++
	t.best = max(t.best, t.count[p])
}

func (r *Result) add(v Vote) {
	r.Votes = append(r.Votes, v)
	if v.OK {
		r.Yes++
	}
}

// Each runs op on the given nodes concurrently, each bounded by timeout, and
// waits for all of them. It returns the votes in the order of nodes.
func Each(ctx context.Context, r Runner, nodes []int, timeout time.Duration, op Op) []Vote {
	out := make([]Vote, len(nodes))
	if len(nodes) == 0 {
		return out
	}
	nctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var local sync.WaitGroup
	local.Add(len(nodes))
	for j, i := range nodes {
		r.Go(func() {
			defer local.Done()
			ok, err := op(nctx, i)
			out[j] = Vote{Node: i, OK: ok, Err: err}
		})
	}
	local.Wait()
	return out
}

// Package fanout sends one operation to every node in parallel and decides at
// a quorum, without waiting for the slowest node.
package fanout

import (
	"context"
	"sync"
	"sync/atomic"
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
}

// Op is the operation run on one node, under ctx bounded by the node timeout.
type Op func(ctx context.Context, node int) (bool, error)

// Late receives a straggler's vote, in the straggler's own goroutine, after
// the decision. reached is the decision.
type Late func(v Vote, reached bool)

// Quorum runs op on nodes 0..n-1 concurrently, each bounded by timeout (one
// deadline shared by all, derived from ctx), and returns as soon as need nodes
// said yes or need can no longer be reached, or ctx ends. It never waits for a
// node once the outcome is decided; a node that answers afterwards is handed
// to late (which may be nil).
//
// Every goroutine it starts is counted in wg before Quorum returns and ends
// within timeout plus the time late takes, so the owner of wg can wait for
// them.
func Quorum(ctx context.Context, wg *sync.WaitGroup, n, need int, timeout time.Duration, op Op, late Late) Result {
	// All nodes start together, so one deadline serves them all: one context
	// per fan-out rather than one per node. The last node call to end
	// releases it (and its timer) without waiting for the deadline.
	nctx, cancel := context.WithTimeout(ctx, timeout)
	var running atomic.Int64
	running.Store(int64(n))
	release := func() {
		if running.Add(-1) == 0 {
			cancel()
		}
	}
	if n == 0 {
		cancel()
	}
	var (
		mu      sync.Mutex
		decided bool
		reached bool
		votes   = make(chan Vote, n) // one slot per node: a send never blocks
	)
	wg.Add(n)
	for i := range n {
		go func() {
			defer wg.Done()
			ok, err := op(nctx, i)
			release()
			v := Vote{Node: i, OK: ok, Err: err}
			mu.Lock()
			d, r := decided, reached
			if !d {
				votes <- v
			}
			mu.Unlock()
			if d && late != nil {
				late(v, r)
			}
		}()
	}
	res := Result{Votes: make([]Vote, 0, n)}
wait:
	for res.Yes < need && n-res.no() >= need {
		select {
		case v := <-votes:
			res.add(v)
		case <-ctx.Done():
			break wait // node calls derive from ctx and are ending too
		}
	}
	mu.Lock()
	decided, reached = true, res.Yes >= need
	mu.Unlock()
	// Votes sent before the decision are ours to report, not late's; none
	// is sent after it.
	for len(votes) > 0 {
		res.add(<-votes)
	}
	res.Reached = reached
	return res
}

func (r *Result) add(v Vote) {
	r.Votes = append(r.Votes, v)
	if v.OK {
		r.Yes++
	}
}

// no counts the votes that were not a yes: noes and errors.
func (r *Result) no() int { return len(r.Votes) - r.Yes }

// Each runs op on the given nodes concurrently, each bounded by timeout, and
// waits for all of them. It returns the votes in the order of nodes.
func Each(ctx context.Context, wg *sync.WaitGroup, nodes []int, timeout time.Duration, op Op) []Vote {
	out := make([]Vote, len(nodes))
	if len(nodes) == 0 {
		return out
	}
	nctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var local sync.WaitGroup
	wg.Add(len(nodes))
	local.Add(len(nodes))
	for j, i := range nodes {
		go func() {
			defer wg.Done()
			defer local.Done()
			ok, err := op(nctx, i)
			out[j] = Vote{Node: i, OK: ok, Err: err}
		}()
	}
	local.Wait()
	return out
}

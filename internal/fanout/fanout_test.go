package fanout_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/redlockgo/redlock/internal/fanout"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errNode = errors.New("node down")

// answer is what a scripted node says once the test lets it.
type answer struct {
	ok  bool
	err error
}

var (
	yes    = answer{ok: true}
	no     = answer{}
	failed = answer{err: errNode}
)

// gated is a fan-out whose node i answers answers[i] only when the test
// releases it. Run inside a synctest bubble, release plus synctest.Wait makes
// the order in which votes reach Quorum the test's choice.
type gated struct {
	answers []answer
	gates   []chan struct{}

	mu    sync.Mutex
	calls []int // nodes whose op has returned
	ctxs  []context.Context
	late  []fanout.Vote
	lateR []bool
}

func newGated(answers ...answer) *gated {
	g := &gated{answers: answers, gates: make([]chan struct{}, len(answers)), ctxs: make([]context.Context, len(answers))}
	for i := range g.gates {
		g.gates[i] = make(chan struct{})
	}
	return g
}

func (g *gated) op(ctx context.Context, i int) (bool, error) {
	g.mu.Lock()
	g.ctxs[i] = ctx
	g.mu.Unlock()
	<-g.gates[i]
	g.mu.Lock()
	g.calls = append(g.calls, i)
	g.mu.Unlock()
	return g.answers[i].ok, g.answers[i].err
}

func (g *gated) onLate(v fanout.Vote, reached bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.late = append(g.late, v)
	g.lateR = append(g.lateR, reached)
}

// release lets node i answer and waits until its vote has been handled.
func (g *gated) release(i int) {
	close(g.gates[i])
	synctest.Wait()
}

// start runs Quorum in its own goroutine; the channel yields its result.
func start(ctx context.Context, wg *sync.WaitGroup, g *gated, need int, late fanout.Late) <-chan fanout.Result {
	out := make(chan fanout.Result, 1)
	go func() { out <- fanout.Quorum(ctx, wg, len(g.answers), need, time.Minute, g.op, late) }()
	synctest.Wait() // every node is in op, blocked on its gate
	return out
}

func nodesOf(votes []fanout.Vote) []int {
	out := make([]int, len(votes))
	for i, v := range votes {
		out[i] = v.Node
	}
	return out
}

func TestQuorumDecision(t *testing.T) {
	for _, tc := range []struct {
		name    string
		need    int
		answers []answer
		order   []int // nodes released one at a time until Quorum returns
		reached bool
		yes     int
	}{
		{name: "quorum of yes without the rest", need: 3,
			answers: []answer{yes, yes, no, yes, yes}, order: []int{0, 1, 3}, reached: true, yes: 3},
		{name: "yes after a no and an error", need: 3,
			answers: []answer{no, yes, failed, yes, yes}, order: []int{0, 2, 1, 3, 4}, reached: true, yes: 3},
		{name: "early refusal on noes", need: 3,
			answers: []answer{no, yes, no, yes, no}, order: []int{0, 2, 4}, reached: false},
		{name: "early refusal on errors", need: 3,
			answers: []answer{failed, failed, yes, failed, yes}, order: []int{3, 0, 1}, reached: false},
		{name: "refusal once need is out of reach, yes votes counted", need: 3,
			answers: []answer{yes, failed, no, no, yes}, order: []int{0, 1, 2, 3}, reached: false, yes: 1},
		{name: "unanimity waits for everyone", need: 3,
			answers: []answer{yes, yes, yes}, order: []int{2, 1, 0}, reached: true, yes: 3},
		{name: "unanimity refused by one", need: 3,
			answers: []answer{yes, yes, no}, order: []int{2}, reached: false},
		{name: "single node yes", need: 1,
			answers: []answer{yes}, order: []int{0}, reached: true, yes: 1},
		{name: "need above n refuses at once", need: 4,
			answers: []answer{yes, yes, yes}, order: nil, reached: false},
		{name: "need zero is reached at once", need: 0,
			answers: []answer{yes, no}, order: nil, reached: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGated(tc.answers...)
				var wg sync.WaitGroup
				out := start(t.Context(), &wg, g, tc.need, g.onLate)
				var res fanout.Result
				for k, i := range tc.order {
					select {
					case <-out:
						t.Fatalf("Quorum returned before node %d (step %d) answered", i, k)
					default:
					}
					g.release(i)
				}
				select {
				case res = <-out:
				default:
					t.Fatalf("Quorum still waiting after %v", tc.order)
				}
				if res.Reached != tc.reached || res.Yes != tc.yes {
					t.Errorf("Reached, Yes = %v, %d; want %v, %d", res.Reached, res.Yes, tc.reached, tc.yes)
				}
				if got := nodesOf(res.Votes); !slices.Equal(got, tc.order) {
					t.Errorf("Votes from nodes %v; want %v (arrival order)", got, tc.order)
				}
				if len(g.late) != 0 {
					t.Errorf("late called before any straggler answered: %v", g.late)
				}

				// The stragglers answer now and go to late, with the decision.
				for i := range tc.answers {
					if !slices.Contains(tc.order, i) {
						close(g.gates[i])
					}
				}
				wg.Wait()
				checkEachSeenOnce(t, g, res)
			})
		})
	}
}

// checkEachSeenOnce checks that after wg.Wait every node's op has returned and
// its vote was seen exactly once, in res.Votes or by late with res.Reached.
func checkEachSeenOnce(t *testing.T, g *gated, res fanout.Result) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.calls) != len(g.answers) {
		t.Errorf("after wg.Wait %d of %d node calls returned", len(g.calls), len(g.answers))
	}
	seen := make([]int, len(g.answers))
	for _, v := range slices.Concat(res.Votes, g.late) {
		seen[v.Node]++
		if a := g.answers[v.Node]; v.OK != a.ok || v.Err != a.err {
			t.Errorf("node %d: vote %+v; want %+v", v.Node, v, a)
		}
	}
	for i, c := range seen {
		if c != 1 {
			t.Errorf("node %d seen %d times in Votes and late; want once", i, c)
		}
	}
	for k, r := range g.lateR {
		if r != res.Reached {
			t.Errorf("late vote of node %d got reached=%v; the decision was %v", g.late[k].Node, r, res.Reached)
		}
	}
}

func TestQuorumVotesBeforeDecisionAreReported(t *testing.T) {
	// Node 1 answers in the same instant as the deciding vote: its vote is
	// in Votes or in late, never lost nor doubled, whichever wins.
	synctest.Test(t, func(t *testing.T) {
		g := newGated(yes, no, yes)
		var wg sync.WaitGroup
		out := start(t.Context(), &wg, g, 2, g.onLate)
		g.release(0)
		close(g.gates[1])
		close(g.gates[2])
		res := <-out
		wg.Wait()
		if !res.Reached || res.Yes != 2 {
			t.Errorf("Reached, Yes = %v, %d; want true, 2", res.Reached, res.Yes)
		}
		checkEachSeenOnce(t, g, res)
	})
}

// hookCtx runs hook, once, the next time its Done method is called.
type hookCtx struct {
	context.Context
	mu   sync.Mutex
	hook func()
}

func (c *hookCtx) Done() <-chan struct{} {
	c.mu.Lock()
	h := c.hook
	c.hook = nil
	c.mu.Unlock()
	if h != nil {
		h()
	}
	return c.Context.Done()
}

func TestQuorumVotesInBufferAtDecision(t *testing.T) {
	// A vote sent while Quorum is deciding belongs in Votes, not to late. To
	// put one there deterministically, the test steps in when Quorum reads
	// ctx.Done() for its next round: nodes 1 and 2 both answer then, Quorum
	// decides on one of them and must find the other in the buffer. (If
	// Quorum stops reading ctx.Done() each round, this test deadlocks.)
	synctest.Test(t, func(t *testing.T) {
		g := newGated(yes, yes, yes)
		ctx := &hookCtx{Context: t.Context()}
		var wg sync.WaitGroup
		out := start(ctx, &wg, g, 2, g.onLate)
		ctx.mu.Lock()
		ctx.hook = func() {
			close(g.gates[1])
			close(g.gates[2])
			synctest.Wait() // both votes are in the buffer
		}
		ctx.mu.Unlock()
		close(g.gates[0])
		res := <-out
		wg.Wait()
		if !res.Reached || res.Yes != 3 || len(res.Votes) != 3 || len(g.late) != 0 {
			t.Errorf("got %+v and late %v; want reached with all 3 yes in Votes", res, g.late)
		}
		checkEachSeenOnce(t, g, res)
	})
}

func TestQuorumContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGated(yes, yes, yes, yes, yes)
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		out := start(ctx, &wg, g, 3, g.onLate)
		g.release(0)
		g.release(4)
		cancel()
		synctest.Wait()
		var res fanout.Result
		select {
		case res = <-out:
		default:
			t.Fatal("Quorum still waiting after its context ended")
		}
		if res.Reached || res.Yes != 2 || !slices.Equal(nodesOf(res.Votes), []int{0, 4}) {
			t.Errorf("got %+v; want not reached, 2 yes from nodes 0 and 4", res)
		}
		for _, c := range g.ctxs {
			if !errors.Is(c.Err(), context.Canceled) {
				t.Errorf("node context: %v; want it cancelled with the caller's", c.Err())
			}
		}
		for i := 1; i <= 3; i++ {
			close(g.gates[i])
		}
		wg.Wait()
		checkEachSeenOnce(t, g, res)
	})
}

func TestQuorumTimeout(t *testing.T) {
	// Nodes that never answer count as failed at the node timeout; their
	// calls end at the shared deadline, CallBound, and go to late.
	synctest.Test(t, func(t *testing.T) {
		const timeout = 3 * time.Second
		var wg sync.WaitGroup
		var late []fanout.Vote
		var mu sync.Mutex
		began := time.Now()
		res := fanout.Quorum(t.Context(), &wg, 3, 2, timeout, func(ctx context.Context, _ int) (bool, error) {
			<-ctx.Done()
			return false, ctx.Err()
		}, func(v fanout.Vote, _ bool) {
			mu.Lock()
			late = append(late, v)
			mu.Unlock()
		})
		if d := time.Since(began); d != timeout {
			t.Errorf("returned after %v; want the node timeout %v", d, timeout)
		}
		wg.Wait()
		if d := time.Since(began); d != fanout.CallBound(timeout) {
			t.Errorf("calls ended after %v; want CallBound %v", d, fanout.CallBound(timeout))
		}
		if res.Reached || len(res.Votes)+len(late) != 3 {
			t.Errorf("got %+v and %d late; want not reached, 3 votes in all", res, len(late))
		}
		for _, v := range slices.Concat(res.Votes, late) {
			if !errors.Is(v.Err, context.DeadlineExceeded) {
				t.Errorf("node %d: %v; want the deadline", v.Node, v.Err)
			}
		}
	})
}

func TestQuorumNodeContextEndsWithLastCall(t *testing.T) {
	// The per-fan-out context is released as soon as every node call is
	// done, not at the deadline: it holds a timer.
	synctest.Test(t, func(t *testing.T) {
		g := newGated(yes, yes, no)
		var wg sync.WaitGroup
		out := start(t.Context(), &wg, g, 2, nil)
		g.release(0)
		g.release(1)
		<-out
		if err := g.ctxs[2].Err(); err != nil {
			t.Fatalf("node context ended while node 2 still runs: %v", err)
		}
		g.release(2)
		wg.Wait()
		if err := g.ctxs[2].Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("node context after the last call: %v; want cancelled", err)
		}
	})
}

func TestQuorumNilLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGated(yes, failed, yes)
		var wg sync.WaitGroup
		out := start(t.Context(), &wg, g, 1, nil)
		g.release(0)
		res := <-out
		g.release(1)
		g.release(2)
		wg.Wait()
		if !res.Reached || len(res.Votes) != 1 {
			t.Errorf("got %+v; want reached on node 0 alone", res)
		}
	})
}

func TestQuorumNoNodes(t *testing.T) {
	for _, need := range []int{0, 1} {
		var wg sync.WaitGroup
		res := fanout.Quorum(t.Context(), &wg, 0, need, time.Minute, func(context.Context, int) (bool, error) {
			t.Error("op called with no nodes")
			return true, nil
		}, func(fanout.Vote, bool) { t.Error("late called with no nodes") })
		wg.Wait()
		if res.Reached != (need == 0) || res.Yes != 0 || len(res.Votes) != 0 {
			t.Errorf("need %d: got %+v", need, res)
		}
	}
}

func TestEach(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []int
	}{
		{name: "none"},
		{name: "one", nodes: []int{2}},
		{name: "some, out of order", nodes: []int{4, 0, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				answers := []answer{yes, no, failed, yes, no}
				gates := make([]chan struct{}, len(answers))
				for i := range gates {
					gates[i] = make(chan struct{})
				}
				var wg sync.WaitGroup
				out := make(chan []fanout.Vote, 1)
				go func() {
					out <- fanout.Each(t.Context(), &wg, tc.nodes, time.Minute, func(_ context.Context, i int) (bool, error) {
						<-gates[i]
						return answers[i].ok, answers[i].err
					})
				}()
				// Each waits for every node, so it has not returned
				// until the last one is released.
				for k, i := range slices.Backward(tc.nodes) {
					synctest.Wait()
					select {
					case <-out:
						t.Fatalf("Each returned with node %d (index %d) still running", i, k)
					default:
					}
					close(gates[i])
				}
				votes := <-out
				wg.Wait()
				if len(votes) != len(tc.nodes) {
					t.Fatalf("%d votes for %d nodes", len(votes), len(tc.nodes))
				}
				for j, v := range votes {
					a := answers[tc.nodes[j]]
					if v.Node != tc.nodes[j] || v.OK != a.ok || v.Err != a.err {
						t.Errorf("vote %d = %+v; want node %d answering %+v", j, v, tc.nodes[j], a)
					}
				}
			})
		})
	}
}

func TestEachTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 2 * time.Second
		var wg sync.WaitGroup
		began := time.Now()
		votes := fanout.Each(t.Context(), &wg, []int{0, 1}, timeout, func(ctx context.Context, _ int) (bool, error) {
			<-ctx.Done()
			return false, ctx.Err()
		})
		wg.Wait()
		if d := time.Since(began); d != timeout {
			t.Errorf("returned after %v; want the timeout %v", d, timeout)
		}
		for _, v := range votes {
			if !errors.Is(v.Err, context.DeadlineExceeded) {
				t.Errorf("node %d: %v; want the deadline", v.Node, v.Err)
			}
		}
	})
}

// BenchmarkQuorum is the fan-out of one lock round on five nodes that answer
// at once, without the network: the cost of Quorum itself.
func BenchmarkQuorum(b *testing.B) {
	var wg sync.WaitGroup
	op := func(context.Context, int) (bool, error) { return true, nil }
	for b.Loop() {
		fanout.Quorum(b.Context(), &wg, 5, 3, time.Second, op, nil)
	}
	wg.Wait()
}

func TestQuorumDecidesAtTimeoutWhileCallsGoOn(t *testing.T) {
	// A node that has not answered at the node timeout counts as failed for
	// the decision, but its call is not cut: it runs to CallBound, so that
	// a slow connection setup completes (and the connection is kept). Its
	// answer then goes to late.
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		g := newGated(yes, yes, no, yes, yes)
		var wg sync.WaitGroup
		began := time.Now()
		out := make(chan fanout.Result, 1)
		go func() { out <- fanout.Quorum(t.Context(), &wg, 5, 3, timeout, g.op, g.onLate) }()
		synctest.Wait()
		g.release(0)
		g.release(1)
		g.release(2)
		res := <-out
		if d := time.Since(began); d != timeout {
			t.Errorf("decided after %v; want the node timeout %v", d, timeout)
		}
		if res.Reached || !res.Expired || res.Yes != 2 || len(res.Votes) != 3 {
			t.Errorf("got %+v; want not reached, expired, 2 yes of 3 votes", res)
		}
		for _, i := range []int{3, 4} {
			if err := g.ctxs[i].Err(); err != nil {
				t.Errorf("node %d's call was cut at the decision: %v", i, err)
			}
			if d, _ := g.ctxs[i].Deadline(); d != began.Add(fanout.CallBound(timeout)) {
				t.Errorf("node %d's deadline is %v after the start; want CallBound %v", i, d.Sub(began), fanout.CallBound(timeout))
			}
		}
		time.Sleep(fanout.CallBound(timeout) - timeout - time.Nanosecond)
		g.release(3) // answers just within its bound
		if err := g.ctxs[4].Err(); err != nil {
			t.Errorf("node 4's call ended early: %v", err)
		}
		g.release(4)
		wg.Wait()
		if want := []int{3, 4}; !slices.Equal(nodesOf(g.late), want) || slices.Contains(g.lateR, true) {
			t.Errorf("late %v (reached %v); want nodes %v with the failed decision", nodesOf(g.late), g.lateR, want)
		}
	})
}

func TestQuorumExpiredOnlyAtTheNodeTimeout(t *testing.T) {
	// Expired says the silent nodes ran out of the node timeout; a decision
	// by the votes, or by the contended grace, is not that.
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		silent := func(ctx context.Context, i int) (bool, error) {
			if i < 2 {
				return i == 0, nil // a yes and a no: contended
			}
			<-ctx.Done()
			return false, ctx.Err()
		}
		if res := fanout.QuorumOn(t.Context(), &wg, 3, 2, time.Second, 10*time.Millisecond, silent, nil, nil); res.Expired {
			t.Errorf("decided by the grace, reported %+v; want not expired", res)
		}
		yesAll := func(context.Context, int) (bool, error) { return true, nil }
		if res := fanout.Quorum(t.Context(), &wg, 3, 2, time.Second, yesAll, nil); res.Expired || !res.Reached {
			t.Errorf("decided by the votes, reported %+v; want reached, not expired", res)
		}
		wg.Wait()
	})
}

func TestQuorumCutByItsContextAtTheNodeTimeoutExpired(t *testing.T) {
	// A context that ends when the node timeout ends too (a keeper's loss
	// point) leaves the silent nodes timed out; one that ends before it
	// does not. Here the timer is always seen first (context's own timer
	// cancels from a goroutine of its own); the other order, which a
	// loaded machine makes now and then, is what fan-out's check of the
	// time past on ctx.Done covers (TestLossDeclaredBeforeUntilWhenNodesHang
	// failed 4 runs in 40 on it before).
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		silent := func(ctx context.Context, i int) (bool, error) {
			if i == 0 {
				return true, nil
			}
			<-ctx.Done()
			return false, ctx.Err()
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		res := fanout.Quorum(ctx, &wg, 3, 2, time.Second, silent, nil)
		cancel()
		if !res.Expired || res.Reached {
			t.Errorf("cut at the node timeout, reported %+v; want expired", res)
		}
		ctx, cancel = context.WithTimeout(t.Context(), 500*time.Millisecond)
		res = fanout.Quorum(ctx, &wg, 3, 2, time.Second, silent, nil)
		cancel()
		if res.Expired {
			t.Errorf("cut before the node timeout, reported %+v; want not expired", res)
		}
		wg.Wait()
	})
}

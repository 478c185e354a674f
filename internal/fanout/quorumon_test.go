package fanout_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redlockgo/redlock/internal/fanout"
)

func TestQuorumOnWaitsForAgreement(t *testing.T) {
	for _, tc := range []struct {
		name    string
		places  []string // the place each node says yes for
		answers []answer
		order   []int // nodes released one at a time until QuorumOn returns
		reached bool
	}{
		{name: "three yes on two places wait for a fourth", places: []string{"a", "b", "a", "a", "b"},
			answers: []answer{yes, yes, yes, yes, yes}, order: []int{0, 1, 2, 3}, reached: true},
		{name: "one place reaches need", places: []string{"a", "a", "a", "b", "b"},
			answers: []answer{yes, yes, yes, yes, yes}, order: []int{3, 0, 1, 2}, reached: true},
		{name: "a split waits while the last node may break it", places: []string{"a", "b", "a", "b", "c"},
			answers: []answer{yes, yes, yes, yes, yes}, order: []int{0, 1, 2, 3, 4}, reached: false},
		{name: "refused once no place can reach need", places: []string{"a", "b", "c", "d", "a"},
			answers: []answer{yes, yes, yes, yes, yes}, order: []int{0, 1, 2, 3}, reached: false},
		{name: "noes count against every place", places: []string{"a", "a", "a", "a", "a"},
			answers: []answer{yes, no, failed, no, yes}, order: []int{0, 1, 2, 3}, reached: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGated(tc.answers...)
				var wg sync.WaitGroup
				out := make(chan fanout.Result, 1)
				go func() {
					out <- fanout.QuorumOn(t.Context(), &wg, len(tc.answers), 3, time.Minute, 0, g.op, g.onLate,
						func(i int) string { return tc.places[i] })
				}()
				synctest.Wait()
				for k, i := range tc.order {
					select {
					case <-out:
						t.Fatalf("QuorumOn returned before node %d (step %d) answered", i, k)
					default:
					}
					g.release(i)
				}
				var res fanout.Result
				select {
				case res = <-out:
				default:
					t.Fatalf("QuorumOn still waiting after %v", tc.order)
				}
				if res.Reached != tc.reached {
					t.Errorf("Reached = %v; want %v", res.Reached, tc.reached)
				}
				if got := nodesOf(res.Votes); !slices.Equal(got, tc.order) {
					t.Errorf("Votes from nodes %v; want %v", got, tc.order)
				}
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

// A contended outcome (an explicit no has arrived) waits for a silent node
// at most grace; without a no, or with grace 0, it waits for it up to the
// node timeout.
func TestQuorumOnGraceBoundsAContendedWait(t *testing.T) {
	const grace, timeout = 50 * time.Millisecond, time.Minute
	for _, tc := range []struct {
		name    string
		answers [4]answer     // nodes 0-3 answer at once; node 4 stays silent
		grace   time.Duration // passed to QuorumOn
		returns time.Duration // when QuorumOn must return, after the answers
	}{
		{name: "two yes and two no: the silent node gets grace", answers: [4]answer{yes, yes, no, no},
			grace: grace, returns: grace},
		{name: "without grace the silent node gets the timeout", answers: [4]answer{yes, yes, no, no},
			grace: 0, returns: timeout},
		{name: "errors are not a no: no grace", answers: [4]answer{yes, yes, failed, failed},
			grace: grace, returns: timeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var late []fanout.Vote
				op := func(ctx context.Context, i int) (bool, error) {
					if i == 4 {
						<-ctx.Done() // silent until the node timeout
						return false, ctx.Err()
					}
					return tc.answers[i].ok, tc.answers[i].err
				}
				onLate := func(v fanout.Vote, _ bool) {
					mu.Lock()
					defer mu.Unlock()
					late = append(late, v)
				}
				var wg sync.WaitGroup
				start := time.Now()
				res := fanout.QuorumOn(t.Context(), &wg, 5, 3, timeout, tc.grace, op, onLate, nil)
				if got := time.Since(start); got != tc.returns {
					t.Errorf("QuorumOn returned after %v; want %v", got, tc.returns)
				}
				if res.Reached || res.Yes != 2 {
					t.Errorf("Reached = %v with %d yes; want false with 2", res.Reached, res.Yes)
				}
				wg.Wait() // node 4 ends at the timeout in every case
				mu.Lock()
				defer mu.Unlock()
				if len(res.Votes)+len(late) != 5 {
					t.Errorf("%d votes and %d late; want 5 in all", len(res.Votes), len(late))
				}
			})
		})
	}
}

// A silent node that answers yes within the grace still completes the
// majority.
func TestQuorumOnGraceLetsAPromptStragglerWin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGated(yes, yes, no, no, yes)
		var wg sync.WaitGroup
		out := make(chan fanout.Result, 1)
		go func() {
			out <- fanout.QuorumOn(t.Context(), &wg, 5, 3, time.Minute, 50*time.Millisecond, g.op, g.onLate, nil)
		}()
		synctest.Wait()
		for _, i := range []int{0, 1, 2, 3} {
			g.release(i)
		}
		time.Sleep(49 * time.Millisecond)
		g.release(4)
		res := <-out
		if !res.Reached {
			t.Errorf("Reached = false; want true: node 4 said yes within the grace")
		}
		wg.Wait()
		checkEachSeenOnce(t, g, res)
	})
}

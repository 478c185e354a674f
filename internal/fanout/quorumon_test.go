package fanout_test

import (
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
					out <- fanout.QuorumOn(t.Context(), &wg, len(tc.answers), 3, time.Minute, g.op, g.onLate,
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

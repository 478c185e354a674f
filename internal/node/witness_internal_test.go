package node

import (
	"testing"
	"time"

	"github.com/redlockgo/redlock/pool"
)

// A node restarted within the uptime's one-second grain of its first run
// may report a start no later than that run's: its first answer must not
// be taken for a late answer of the first run, which was declared fresh,
// or the new, empty run counts at once (a second holder: the restart case
// of the adapter suite, on a loaded machine). The stricter identity wins,
// whichever order the answers are handled in.
func TestWitnessKeepsTheStricterOfTwoRuns(t *testing.T) {
	now := time.Now()
	first := pool.Identity{RunID: "r0", FreshStart: true, Started: now.Add(time.Second), Learned: now}
	second := pool.Identity{RunID: "r1", Started: now.Add(900 * time.Millisecond), Learned: now.Add(100 * time.Millisecond)}
	for _, order := range [][]pool.Identity{{first, second}, {second, first}} {
		w := newWitnessed(nil)
		for _, id := range order {
			w.keep(id)
		}
		got, _ := w.Identity()
		if got.RunID != "r1" || got.FreshStart {
			t.Fatalf("after %s then %s: the node is judged as %s (fresh %v), want r1, not fresh",
				order[0].RunID, order[1].RunID, got.RunID, got.FreshStart)
		}
	}
	// Of two runs judged by their age, the younger.
	old := pool.Identity{RunID: "r2", Started: now.Add(-time.Hour)}
	w := newWitnessed(nil)
	w.keep(second)
	w.keep(old)
	if got, _ := w.Identity(); got.RunID != "r1" {
		t.Fatalf("a late answer of an older run made the node look older: %s", got.RunID)
	}
}

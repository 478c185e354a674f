package chaos_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/integration/chaos"
)

// leadership is a leadership of election e by client from ms start to ms
// end with term.
func leadership(e string, client, start, end int, term uint64) chaos.Hold {
	h := fenced(hold(e, client, start, end), term)
	h.Workload = chaos.Election
	return h
}

func observed(stream int, terms ...uint64) []chaos.Observation {
	out := make([]chaos.Observation, len(terms))
	for i, term := range terms {
		out[i] = chaos.Observation{Election: "e", Stream: stream, Term: term, At: at(i)}
	}
	return out
}

// Leaderships overlap by the lock's rule, terms rise in the order the
// leaderships began, and an observer never goes back to a lower term.
func TestCheckElection(t *testing.T) {
	for _, tc := range []struct {
		name      string
		h         chaos.History
		overlaps  [][2]int
		terms     []string // Where of each term violation
		violating int      // the election's violations
		restarts  int      // terms begun again after an amnesia
	}{
		{"hand-offs and a lapse, terms rising; observers see them in order, with a lapse and a proclamation",
			chaos.History{
				Holds:        []chaos.Hold{leadership("e", 1, 0, 10, 3), leadership("e", 2, 10, 20, 4), leadership("e", 1, 40, 50, 7)},
				Observations: append(observed(0, 3, 4, 0, 7), observed(1, 4, 4, 7)...),
			}, nil, nil, 0, 0},
		{"two leaders at once", chaos.History{Holds: []chaos.Hold{leadership("e", 1, 0, 10, 3), leadership("e", 2, 9, 20, 4)}},
			[][2]int{{1, 2}}, nil, 1, 0},
		{"a later leadership with a lower term, though its Campaign began first", chaos.History{Holds: []chaos.Hold{
			leadership("e", 1, 0, 10, 5), fenced(chaos.Hold{Key: "e", Client: 2, Begin: at(-5), Start: at(10), End: at(20), Workload: chaos.Election}, 4),
		}}, nil, []string{"leadership"}, 1, 0},
		{"the same term twice", chaos.History{Holds: []chaos.Hold{leadership("e", 1, 0, 10, 5), leadership("e", 2, 10, 20, 5)}},
			nil, []string{"leadership"}, 1, 0},
		{"terms begin again after a majority forgot the counter: judged within each epoch",
			chaos.History{Holds: []chaos.Hold{leadership("e", 1, 0, 10, 9), leadership("e", 2, 40, 50, 2), leadership("e", 1, 60, 70, 2)},
				Amnesias: []time.Time{at(20)}}, nil, []string{"leadership"}, 1, 1},
		{"an observer goes back, after a lapse; another stream's terms are its own",
			chaos.History{Observations: append(observed(0, 5, 0, 4), observed(1, 2)...)}, nil, []string{"observer"}, 1, 0},
		{"the amnesia hazard: a second leader, its term restarted",
			chaos.History{Holds: []chaos.Hold{leadership("e", 1, 0, 100, 9), leadership("e", 2, 50, 60, 1)}, Observations: observed(0, 9, 1)},
			[][2]int{{1, 2}}, []string{"leadership", "observer"}, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := chaos.Check(tc.h)
			assert.Equal(t, tc.overlaps, pairs(r))
			var where []string
			for _, v := range r.TermViolations {
				where = append(where, v.Where)
			}
			assert.Equal(t, tc.terms, where)
			assert.Empty(t, r.FenceViolations, "leaderships are judged by their terms, not the lock's fence rule")
			assert.Equal(t, tc.violating, r.Workload(chaos.Election).Violations)
			assert.Equal(t, len(tc.overlaps)+len(tc.terms), r.Violations())
			assert.Equal(t, len(tc.h.Holds), r.Workload(chaos.Election).Holds)
			assert.Equal(t, tc.restarts, r.TermRestarts)
			assert.Equal(t, len(tc.h.Observations), r.Observed)
		})
	}
}

// The summary counts the election's leaderships; the negative control
// misses the election when it found nothing there.
func TestResultElection(t *testing.T) {
	cfg := chaos.Config{Unsafe: true, MultiEvery: -1, RWClients: -1, PermitClients: -1, ElectionClients: 3}
	h := chaos.History{Holds: []chaos.Hold{hold("k", 1, 0, 10), hold("k", 2, 5, 20), leadership("e", 3, 0, 10, 1)}}
	res := chaos.Result{Report: chaos.Check(h), Config: cfg}
	assert.Equal(t, "acquisitions=3 faults=0 violations=1 lost_updates=0 untimed_keys=0 majority_amnesia_rounds=0 failover_rounds=0 | exclusive holds=2 violations=1 | "+
		"election leaderships=1 violations=0", res.Summary())
	require.Equal(t, []chaos.Workload{chaos.Election}, res.Missed())
	assert.Equal(t, chaos.ExitNoViolations, res.ExitCode(true))

	h.Holds = append(h.Holds, leadership("e", 4, 5, 20, 2))
	res = chaos.Result{Report: chaos.Check(h), Config: cfg}
	assert.Empty(t, res.Missed())
	assert.Equal(t, chaos.ExitOK, res.ExitCode(true))
	assert.Contains(t, res.Overlaps[0].String(), "(election)", "key e sorts first")
}

package chaos_test

import (
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/integration/chaos"
)

// reader and writer are holds of the read/write workload.
func reader(key string, client, start, end int) chaos.Hold {
	h := hold(key, client, start, end)
	h.Workload, h.Shared = chaos.RW, true
	return h
}

func writer(key string, client, start, end int) chaos.Hold {
	h := hold(key, client, start, end)
	h.Workload = chaos.RW
	return h
}

// permit is a hold of one of limit permits of key.
func permit(key string, limit, client, start, end int) chaos.Hold {
	h := hold(key, client, start, end)
	h.Workload, h.Limit = chaos.Permits, limit
	return h
}

func TestCheckReadersAndWriters(t *testing.T) {
	for _, tc := range []struct {
		name  string
		holds []chaos.Hold
		want  [][2]int
		peak  int
	}{
		{"readers share the key", []chaos.Hold{reader("k", 1, 0, 10), reader("k", 2, 5, 15), reader("k", 3, 6, 8)}, nil, 3},
		{"a writer after the readers, readers after the writer", []chaos.Hold{
			reader("k", 1, 0, 10), reader("k", 2, 5, 15), writer("k", 3, 15, 20), reader("k", 4, 20, 30), reader("k", 5, 21, 25),
		}, nil, 2},
		{"a writer among readers", []chaos.Hold{reader("k", 1, 0, 10), reader("k", 2, 5, 15), writer("k", 3, 9, 12)},
			[][2]int{{1, 3}, {2, 3}}, 3},
		{"a reader inside a writer's hold", []chaos.Hold{writer("k", 1, 0, 10), reader("k", 2, 5, 6)}, [][2]int{{1, 2}}, 2},
		{"two writers", []chaos.Hold{writer("k", 1, 0, 10), writer("k", 2, 9, 20)}, [][2]int{{1, 2}}, 2},
		{"readers of different keys, a writer of a third", []chaos.Hold{
			reader("a", 1, 0, 10), reader("b", 2, 0, 10), writer("c", 3, 0, 10),
		}, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := chaos.Check(chaos.History{Holds: tc.holds})
			assert.Equal(t, tc.want, pairs(r))
			assert.Equal(t, len(tc.want), r.Violations())
			assert.Equal(t, chaos.WorkloadReport{Workload: chaos.RW, Holds: len(tc.holds), Violations: len(tc.want)}, r.Workload(chaos.RW))
			assert.Zero(t, r.Workload(chaos.Exclusive).Holds)
			peak := 0
			for _, l := range r.Load {
				peak = max(peak, l.PeakHolders)
			}
			assert.Equal(t, tc.peak, peak)
		})
	}
}

func TestCheckPermits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		holds []chaos.Hold
		want  [][]int // the clients of each excess, the one that went over last
		peak  int
	}{
		{"up to the limit at once", []chaos.Hold{permit("p", 2, 1, 0, 10), permit("p", 2, 2, 5, 15), permit("p", 2, 3, 10, 20)}, nil, 2},
		{"one over the limit", []chaos.Hold{permit("p", 2, 1, 0, 10), permit("p", 2, 2, 5, 15), permit("p", 2, 3, 9, 20)},
			[][]int{{1, 2, 3}}, 3},
		{"each new holder over it counts", []chaos.Hold{
			permit("p", 1, 1, 0, 100), permit("p", 1, 2, 10, 20), permit("p", 1, 3, 30, 40),
		}, [][]int{{1, 2}, {1, 3}}, 2},
		{"permits of different keys are counted apart", []chaos.Hold{
			permit("p", 1, 1, 0, 10), permit("q", 1, 2, 0, 10),
		}, nil, 1},
		{"an empty hold is never relied upon", []chaos.Hold{permit("p", 1, 1, 0, 10), permit("p", 1, 2, 5, 5)}, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := chaos.Check(chaos.History{Holds: tc.holds})
			var got [][]int
			for _, e := range r.Excesses {
				var cs []int
				for _, h := range e.Holds {
					cs = append(cs, h.Client)
				}
				got = append(got, cs)
				assert.Contains(t, e.String(), "limit")
			}
			assert.Equal(t, tc.want, got)
			assert.Empty(t, r.Overlaps, "permit keys are judged by their limit alone")
			assert.Equal(t, len(tc.want), r.Violations())
			assert.Equal(t, len(tc.want), r.Workload(chaos.Permits).Violations)
			peak := 0
			for _, l := range r.Load {
				peak = max(peak, l.PeakHolders)
			}
			assert.Equal(t, tc.peak, peak)
		})
	}
}

// An overlap of holds of two workloads counts in both; the total counts it
// once.
func TestCheckWorkloadsShareAnOverlap(t *testing.T) {
	multi := hold("k", 2, 5, 20)
	multi.Workload = chaos.Multi
	r := chaos.Check(chaos.History{Holds: []chaos.Hold{hold("k", 1, 0, 10), multi, hold("k", 3, 30, 40)}})
	assert.Equal(t, 1, r.Violations())
	assert.Equal(t, []chaos.WorkloadReport{
		{Workload: chaos.Exclusive, Holds: 2, Violations: 1},
		{Workload: chaos.Multi, Holds: 1, Violations: 1},
		{Workload: chaos.RW},
		{Workload: chaos.Permits},
		{Workload: chaos.Election},
	}, r.Workloads)
	assert.Contains(t, r.Overlaps[0].String(), "(multi)")
}

// The negative control passes only when it found violations in every
// workload it played.
func TestResultVerdictPerWorkload(t *testing.T) {
	all := chaos.Config{Unsafe: true, MultiEvery: 4, RWClients: 4, PermitClients: 4}
	multi := hold("m", 4, 5, 20)
	multi.Workload = chaos.Multi
	violations := map[chaos.Workload][]chaos.Hold{
		chaos.Exclusive: {hold("k", 1, 0, 10), hold("k", 2, 5, 20)},
		chaos.Multi:     {hold("m", 3, 0, 10), multi},
		chaos.RW:        {reader("r", 5, 0, 10), writer("r", 6, 5, 20)},
		chaos.Permits:   {permit("p", 1, 7, 0, 10), permit("p", 1, 8, 5, 20)},
	}
	result := func(cfg chaos.Config, ws ...chaos.Workload) chaos.Result {
		var h chaos.History
		for _, w := range ws {
			h.Holds = append(h.Holds, violations[w]...)
		}
		return chaos.Result{Report: chaos.Check(h), Config: cfg}
	}
	every := result(all, chaos.Exclusive, chaos.Multi, chaos.RW, chaos.Permits)
	assert.Empty(t, every.Missed())
	assert.Equal(t, chaos.ExitOK, every.ExitCode(true))
	assert.Equal(t, chaos.ExitViolations, every.ExitCode(false))
	assert.Equal(t, "acquisitions=8 faults=0 violations=4 lost_updates=0 untimed_keys=0 majority_amnesia_rounds=0 failover_rounds=0 | exclusive holds=3 violations=2 | "+
		"multi holds=1 violations=1 | rw holds=2 violations=1 | permits holds=2 violations=1", every.Summary())

	noPermits := result(all, chaos.Exclusive, chaos.Multi, chaos.RW)
	require.Equal(t, []chaos.Workload{chaos.Permits}, noPermits.Missed())
	assert.Equal(t, chaos.ExitNoViolations, noPermits.ExitCode(true), "the permits' hazard went unseen")

	onlyExclusive := all
	onlyExclusive.MultiEvery, onlyExclusive.RWClients, onlyExclusive.PermitClients = -1, -1, -1
	assert.Equal(t, chaos.ExitOK, result(onlyExclusive, chaos.Exclusive).ExitCode(true), "a workload not played is not expected")
}

// A safe run that should have met the majority amnesia and did not, or
// did and then never took a lock of some workload again, says so; the
// quarantine's own pause counts against neither.
func TestUnexercised(t *testing.T) {
	every := map[chaos.Workload]int{chaos.Exclusive: 5, chaos.Multi: 1, chaos.RW: 3, chaos.Permits: 2}
	run := func(cfg chaos.Config, elapsed time.Duration, a chaos.AmnesiaReport, holds map[chaos.Workload]int) chaos.Result {
		r := chaos.Result{Config: cfg, Elapsed: elapsed, Amnesia: a}
		for _, w := range chaos.Workloads {
			r.Workloads = append(r.Workloads, chaos.WorkloadReport{Workload: w, Holds: holds[w]})
		}
		return r
	}
	safe := chaos.Config{Duration: time.Minute, MultiEvery: 4, RWClients: 4, PermitClients: 4}
	counted := chaos.AmnesiaReport{Rounds: 2, QuarantineEnd: 14 * time.Second, HoldsAfter: every}

	assert.Empty(t, run(safe, time.Minute, counted, every).Unexercised())
	assert.Equal(t, "acquisitions=0 faults=0 violations=0 lost_updates=0 untimed_keys=0 majority_amnesia_rounds=2 failover_rounds=0 | exclusive holds=5 violations=0 | "+
		"multi holds=1 violations=0 | rw holds=3 violations=0 | permits holds=2 violations=0", run(safe, time.Minute, counted, every).Summary())

	none := run(safe, 20*time.Second, chaos.AmnesiaReport{Uncounted: 1, Skipped: 1}, every).Unexercised()
	require.Len(t, none, 1)
	assert.Contains(t, none[0], "no majority-amnesia round counted in 20s (1 not counted, 1 skipped)")
	assert.Empty(t, run(safe, 10*time.Second, chaos.AmnesiaReport{}, every).Unexercised(), "too short a run for one")

	noRW := map[chaos.Workload]int{chaos.Exclusive: 5, chaos.Multi: 1, chaos.Permits: 2}
	stuck := counted
	stuck.HoldsAfter = noRW
	got := run(safe, time.Minute, stuck, every).Unexercised()
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "workload rw took no lock in the 46s after the first majority-amnesia quarantine ended")
	late := stuck
	late.QuarantineEnd = 57 * time.Second
	assert.Empty(t, run(safe, time.Minute, late, every).Unexercised(), "the quarantine ended too late to judge")
	// The run's wind-down after its duration begins no lock: a quarantine
	// that ended 3s before the duration is not judged however long the
	// wind-down (seen: 0.1s before it, 5.3s of wind-down).
	assert.Empty(t, run(safe, time.Minute+10*time.Second, late, every).Unexercised(), "the wind-down judged as time to recover")

	// A killed leader leaves the election without one for a TTL: its
	// window is one TTL longer.
	electing := safe
	electing.ElectionClients, electing.TTL = 3, 3*time.Second
	withElection := maps.Clone(every)
	withElection[chaos.Election] = 4
	noLeader := counted
	noLeader.HoldsAfter = every // no election among them
	assert.Empty(t, run(electing, 21*time.Second, noLeader, withElection).Unexercised(), "7s after the quarantine: within recoverWindow and a TTL")
	got = run(electing, 23*time.Second, noLeader, withElection).Unexercised()
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "workload election took no lock in the 9s after the first majority-amnesia quarantine ended")

	idle := run(safe, time.Minute, counted, noRW).Unexercised()
	require.Len(t, idle, 1)
	assert.Contains(t, idle[0], "workload rw took no lock in 1m0s")

	fenced := safe
	fenced.Fencing = true
	assert.Empty(t, run(fenced, time.Minute, chaos.AmnesiaReport{}, every).Unexercised(), "fenced runs have no such round")
	unsafe := safe
	unsafe.Unsafe = true
	assert.Empty(t, run(unsafe, time.Minute, chaos.AmnesiaReport{}, nil).Unexercised(), "the unsafe run is judged by Missed")
}

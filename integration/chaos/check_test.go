package chaos_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/integration/chaos"
)

// t0 is the origin of the synthetic histories; at(ms) a moment after it.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// hold is a hold of key by client from ms start to ms end, its Lock call
// having begun 1ms before start.
func hold(key string, client, start, end int) chaos.Hold {
	return chaos.Hold{Key: key, Client: client, Begin: at(start - 1), Start: at(start), End: at(end)}
}

func fenced(h chaos.Hold, fence uint64) chaos.Hold {
	h.Fence = fence
	return h
}

func write(key string, client, sent, done int, fence uint64, out chaos.Outcome) chaos.Write {
	return chaos.Write{Key: key, Client: client, Fence: fence, Sent: at(sent), Done: at(done), Outcome: out}
}

// pairs lists the overlapping pairs as client numbers, first starter first.
func pairs(r chaos.Report) [][2]int {
	var out [][2]int
	for _, o := range r.Overlaps {
		out = append(out, [2]int{o.A.Client, o.B.Client})
	}
	return out
}

func TestCheckOverlaps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		holds []chaos.Hold
		want  [][2]int
	}{
		{"none", nil, nil},
		{"one after another", []chaos.Hold{hold("k", 1, 0, 10), hold("k", 2, 11, 20), hold("k", 3, 25, 30)}, nil},
		{"touching ends do not overlap", []chaos.Hold{hold("k", 1, 0, 10), hold("k", 2, 10, 20)}, nil},
		{"two at once", []chaos.Hold{hold("k", 1, 0, 10), hold("k", 2, 9, 20)}, [][2]int{{1, 2}}},
		{"input order does not matter", []chaos.Hold{hold("k", 2, 9, 20), hold("k", 1, 0, 10)}, [][2]int{{1, 2}}},
		{"one inside another", []chaos.Hold{hold("k", 1, 0, 100), hold("k", 2, 40, 50)}, [][2]int{{1, 2}}},
		{"same start", []chaos.Hold{hold("k", 1, 5, 10), hold("k", 2, 5, 20)}, [][2]int{{1, 2}}},
		{"every pair of three", []chaos.Hold{hold("k", 1, 0, 30), hold("k", 2, 10, 40), hold("k", 3, 20, 50)},
			[][2]int{{1, 2}, {1, 3}, {2, 3}}},
		{"a long hold against each short one it spans", []chaos.Hold{
			hold("k", 0, 0, 1000), hold("k", 1, 100, 110), hold("k", 2, 120, 130), hold("k", 3, 990, 1010), hold("k", 4, 1000, 1005),
		}, [][2]int{{0, 1}, {0, 2}, {0, 3}, {3, 4}}},
		{"different keys never overlap", []chaos.Hold{hold("a", 1, 0, 10), hold("b", 2, 0, 10)}, nil},
		{"an empty hold is never relied upon", []chaos.Hold{hold("k", 1, 0, 10), hold("k", 2, 5, 5), hold("k", 3, 6, 4)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := chaos.Check(chaos.History{Holds: tc.holds})
			assert.Equal(t, tc.want, pairs(r))
			assert.Equal(t, len(tc.want), r.Violations())
			assert.Equal(t, len(tc.holds), r.Acquisitions)
		})
	}
}

func TestOverlapDuration(t *testing.T) {
	r := chaos.Check(chaos.History{Holds: []chaos.Hold{hold("k", 1, 0, 100), hold("k", 2, 40, 50), hold("k", 3, 90, 200)}})
	require.Len(t, r.Overlaps, 2)
	assert.Equal(t, 10*time.Millisecond, r.Overlaps[0].Duration())
	assert.Equal(t, 10*time.Millisecond, r.Overlaps[1].Duration())
	assert.Contains(t, r.Overlaps[0].String(), "client 1")
}

func TestCheckCounters(t *testing.T) {
	ok := func(c, sent int) chaos.Write { return write("k", c, sent, sent+1, 0, chaos.Committed) }
	unknown := func(c, sent int) chaos.Write { return write("k", c, sent, sent+1, 0, chaos.Unknown) }
	rejected := func(c, sent int) chaos.Write { return write("k", c, sent, sent+1, 0, chaos.Rejected) }
	for _, tc := range []struct {
		name   string
		writes []chaos.Write
		final  map[string]int64
		lost   int64
	}{
		{"every increment kept", []chaos.Write{ok(1, 0), ok(2, 10), ok(3, 20)}, map[string]int64{"k": 3}, 0},
		{"one increment overwritten", []chaos.Write{ok(1, 0), ok(2, 10), ok(3, 20)}, map[string]int64{"k": 2}, 1},
		{"all lost", []chaos.Write{ok(1, 0), ok(2, 10)}, map[string]int64{"k": 0}, 2},
		{"missing final counts as 0", []chaos.Write{ok(1, 0)}, nil, 1},
		{"an unknown write may have landed", []chaos.Write{ok(1, 0), unknown(2, 10)}, map[string]int64{"k": 2}, 0},
		{"or not", []chaos.Write{ok(1, 0), unknown(2, 10)}, map[string]int64{"k": 1}, 0},
		{"but cannot excuse a lost committed one", []chaos.Write{ok(1, 0), ok(2, 5), unknown(2, 10)}, map[string]int64{"k": 1}, 1},
		{"more than could have been written", []chaos.Write{ok(1, 0), unknown(2, 10)}, map[string]int64{"k": 4}, 2},
		{"a counter nobody wrote", nil, map[string]int64{"k": 2}, 2},
		{"rejected writes add nothing", []chaos.Write{ok(1, 0), rejected(2, 10)}, map[string]int64{"k": 1}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := chaos.Check(chaos.History{Writes: tc.writes, Final: tc.final})
			assert.Equal(t, tc.lost, r.LostUpdates)
			assert.Zero(t, r.Violations(), "lost updates are counted apart")
		})
	}
}

func TestCheckCountersPerKey(t *testing.T) {
	r := chaos.Check(chaos.History{
		Writes: []chaos.Write{
			write("a", 1, 0, 1, 0, chaos.Committed), write("a", 2, 5, 6, 0, chaos.Committed),
			write("b", 1, 0, 1, 0, chaos.Committed), write("b", 2, 5, 6, 0, chaos.Rejected),
		},
		Final: map[string]int64{"a": 1, "b": 1},
	})
	assert.Equal(t, []chaos.Counter{
		{Key: "a", Committed: 2, Final: 1, Lost: 1},
		{Key: "b", Committed: 1, Rejects: 1, Final: 1},
	}, r.Counters)
	assert.EqualValues(t, 1, r.LostUpdates)
}

func TestCheckLockFences(t *testing.T) {
	for _, tc := range []struct {
		name  string
		holds []chaos.Hold
		want  int
	}{
		{"strictly increasing", []chaos.Hold{fenced(hold("k", 1, 0, 10), 1), fenced(hold("k", 2, 20, 30), 2), fenced(hold("k", 3, 40, 50), 7)}, 0},
		{"a later lock with a lower fence", []chaos.Hold{fenced(hold("k", 1, 0, 10), 5), fenced(hold("k", 2, 20, 30), 4)}, 1},
		{"a later lock with the same fence", []chaos.Hold{fenced(hold("k", 1, 0, 10), 5), fenced(hold("k", 2, 20, 30), 5)}, 1},
		{"below the highest fence before it, not only the last", []chaos.Hold{
			fenced(hold("k", 1, 0, 10), 9), fenced(hold("k", 2, 20, 30), 3), fenced(hold("k", 3, 40, 50), 10),
		}, 1},
		{"every later lock below counts", []chaos.Hold{
			fenced(hold("k", 1, 0, 10), 9), fenced(hold("k", 2, 20, 30), 3), fenced(hold("k", 3, 40, 50), 4),
		}, 2},
		// A call that began before the other lock was returned may get a
		// lower fence: it is ordered before it.
		{"calls that began before the other returned", []chaos.Hold{
			{Key: "k", Client: 1, Begin: at(0), Start: at(10), End: at(20), Fence: 5},
			{Key: "k", Client: 2, Begin: at(5), Start: at(25), End: at(30), Fence: 4},
		}, 0},
		{"fences of different keys are unrelated", []chaos.Hold{fenced(hold("a", 1, 0, 10), 5), fenced(hold("b", 2, 20, 30), 1)}, 0},
		{"holds without fences are ignored", []chaos.Hold{fenced(hold("k", 1, 0, 10), 5), hold("k", 2, 20, 30)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := chaos.Check(chaos.History{Holds: tc.holds})
			assert.Len(t, r.FenceViolations, tc.want)
			for _, v := range r.FenceViolations {
				assert.Equal(t, "lock", v.Where)
				assert.LessOrEqual(t, v.Fence, v.Prior)
			}
			assert.Equal(t, tc.want, r.Violations())
		})
	}
}

func TestCheckStoreFences(t *testing.T) {
	ok := func(c, sent, done int, f uint64) chaos.Write { return write("k", c, sent, done, f, chaos.Committed) }
	for _, tc := range []struct {
		name   string
		writes []chaos.Write
		want   int
	}{
		{"accepted in increasing order", []chaos.Write{ok(1, 0, 1, 1), ok(2, 10, 11, 2), ok(3, 20, 21, 5)}, 0},
		{"a lower fence accepted later", []chaos.Write{ok(1, 0, 1, 5), ok(2, 10, 11, 4)}, 1},
		{"the same fence accepted twice in a row", []chaos.Write{ok(1, 0, 1, 5), ok(2, 10, 11, 5)}, 1},
		{"the same fence accepted twice at once", []chaos.Write{ok(1, 0, 10, 5), ok(2, 5, 15, 5)}, 1},
		{"concurrent writes may land in either order", []chaos.Write{ok(1, 0, 10, 5), ok(2, 5, 15, 4)}, 0},
		{"rejected writes are not accepted", []chaos.Write{ok(1, 0, 1, 5), write("k", 2, 10, 11, 4, chaos.Rejected)}, 0},
		{"unknown outcomes are not accepted", []chaos.Write{ok(1, 0, 1, 5), write("k", 2, 10, 11, 5, chaos.Unknown)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			final := map[string]int64{"k": int64(len(tc.writes))}
			r := chaos.Check(chaos.History{Writes: tc.writes, Final: final})
			assert.Len(t, r.FenceViolations, tc.want)
			for _, v := range r.FenceViolations {
				assert.Equal(t, "store", v.Where)
				assert.Contains(t, v.String(), "not above")
			}
		})
	}
}

// sim plays read-modify-write increments on an in-memory counter, the way
// the workers do on the store, and records them as a History.
type sim struct {
	h     chaos.History
	value int64
}

// read is a hold's read; the returned func is its write, made later.
func (s *sim) read(h chaos.Hold) func(sent int) {
	s.h.Holds = append(s.h.Holds, h)
	v := s.value
	return func(sent int) {
		s.value = v + 1
		s.h.Writes = append(s.h.Writes, write(h.Key, h.Client, sent, sent+1, h.Fence, chaos.Committed))
	}
}

func (s *sim) history() chaos.History {
	s.h.Final = map[string]int64{"k": s.value}
	return s.h
}

// The two hazards of the unsafe run, as the checker must see them.
func TestCheckFlagsTheHazards(t *testing.T) {
	t.Run("a majority restarted empty under a holder", func(t *testing.T) {
		var s sim
		s.read(hold("k", 1, 0, 10))(5)
		victim := s.read(hold("k", 0, 20, 3000)) // its lock is valid for 30s
		// The nodes forget; others take the lock and increment meanwhile.
		s.read(hold("k", 2, 1500, 1505))(1504)
		s.read(hold("k", 3, 1510, 1515))(1514)
		victim(2999) // and the victim, still valid, writes what it read
		r := chaos.Check(s.history())
		assert.Equal(t, [][2]int{{0, 2}, {0, 3}}, pairs(r))
		assert.EqualValues(t, 2, r.LostUpdates)
	})
	t.Run("a holder paused past its validity", func(t *testing.T) {
		var s sim
		paused := s.read(hold("k", 1, 0, 1000)) // the hold ends at Until()
		s.read(hold("k", 2, 1020, 1025))(1024)
		paused(1500) // the pause is over: it writes anyway
		r := chaos.Check(s.history())
		assert.Zero(t, r.Violations(), "the holds did not overlap")
		assert.EqualValues(t, 1, r.LostUpdates, "but the update of client 2 was lost")
	})
	t.Run("a correct history", func(t *testing.T) {
		var s sim
		for i := range 100 {
			s.read(fenced(hold("k", i%5, i*10, i*10+5), uint64(i+1)))(i*10 + 4)
		}
		r := chaos.Check(s.history())
		assert.Zero(t, r.Violations())
		assert.Zero(t, r.LostUpdates)
		assert.Equal(t, 100, r.Acquisitions)
	})
}

func TestResultVerdict(t *testing.T) {
	faults := map[string]int{"pause": 2, "partition": 1}
	clean := chaos.Result{Report: chaos.Report{Acquisitions: 10}, Faults: faults}
	overlap := chaos.Result{Report: chaos.Check(chaos.History{Holds: []chaos.Hold{hold("k", 1, 0, 10), hold("k", 2, 5, 20)}}), Faults: faults}
	overlap.Acquisitions = 10
	lost := clean
	lost.LostUpdates = 3
	assert.Equal(t, "acquisitions=10 faults=3 violations=0 lost_updates=0 untimed_keys=0 majority_amnesia_rounds=0 failover_rounds=0 | exclusive holds=0 violations=0", clean.Summary())
	assert.Equal(t, "acquisitions=10 faults=3 violations=1 lost_updates=0 untimed_keys=0 majority_amnesia_rounds=0 failover_rounds=0 | exclusive holds=2 violations=1", overlap.Summary())
	assert.Equal(t, "acquisitions=10 faults=3 violations=0 lost_updates=3 untimed_keys=0 majority_amnesia_rounds=0 failover_rounds=0 | exclusive holds=0 violations=0", lost.Summary())

	untimed := clean
	untimed.Untimed = []string{"node 0: k:queue:entries"}
	assert.Equal(t, "acquisitions=10 faults=3 violations=0 lost_updates=0 untimed_keys=1 majority_amnesia_rounds=0 failover_rounds=0 | exclusive holds=0 violations=0", untimed.Summary())

	unsafe := func(r chaos.Result) chaos.Result { r.Config.Unsafe = true; return r }
	for _, tc := range []struct {
		name   string
		r      chaos.Result
		expect bool
		want   int
	}{
		{"safe, clean", clean, false, chaos.ExitOK},
		{"safe, overlap", overlap, false, chaos.ExitViolations},
		{"safe, lost update", lost, false, chaos.ExitViolations},
		{"unsafe, found", unsafe(lost), false, chaos.ExitViolations},
		{"unsafe, found, expected", unsafe(overlap), true, chaos.ExitOK},
		{"unsafe, nothing found", unsafe(clean), false, chaos.ExitNoViolations},
		{"unsafe, nothing found, expected", unsafe(clean), true, chaos.ExitNoViolations},
		{"safe, nothing found, expected", clean, true, chaos.ExitNoViolations},
		{"safe, a key without a TTL", untimed, false, chaos.ExitViolations},
		{"unsafe, found, expected, a key without a TTL", func() chaos.Result { r := unsafe(overlap); r.Untimed = untimed.Untimed; return r }(), true, chaos.ExitViolations},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.r.ExitCode(tc.expect))
		})
	}
}

// queued is a hold of key by client whose Lock call began at ms begin.
func queued(key string, client, begin, start, end int) chaos.Hold {
	h := hold(key, client, start, end)
	h.Begin = at(begin)
	return h
}

func TestCheckLoad(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name  string
		holds []chaos.Hold
		want  []chaos.KeyLoad
	}{
		{"none", nil, nil},
		{"a queue of three: both later ones contended", []chaos.Hold{
			queued("k", 1, 0, 1, 10), queued("k", 2, 2, 10, 20), queued("k", 3, 5, 20, 30),
		}, []chaos.KeyLoad{{Key: "k", Acquisitions: 3, Holders: 3, Contended: 2, PeakCalls: 2, PeakHolders: 1, WaitP50: ms(8), WaitMax: ms(15)}}},
		{"one after another: nobody contended", []chaos.Hold{
			queued("k", 1, 0, 1, 10), queued("k", 2, 10, 11, 20), queued("k", 1, 25, 26, 30),
		}, []chaos.KeyLoad{{Key: "k", Acquisitions: 3, Holders: 2, PeakCalls: 1, PeakHolders: 1, WaitP50: ms(1), WaitMax: ms(1)}}},
		{"calls racing on a free key", []chaos.Hold{
			queued("k", 1, 0, 5, 6), queued("k", 2, 1, 7, 8), queued("k", 3, 2, 9, 10), queued("k", 4, 20, 21, 22),
		}, []chaos.KeyLoad{{Key: "k", Acquisitions: 4, Holders: 4, Contended: 3, PeakCalls: 3, PeakHolders: 1, WaitP50: ms(5), WaitMax: ms(7)}}},
		{"a long hold covers later calls", []chaos.Hold{
			queued("k", 1, 0, 1, 100), queued("k", 2, 50, 100, 110), queued("k", 3, 60, 110, 120),
		}, []chaos.KeyLoad{{Key: "k", Acquisitions: 3, Holders: 3, Contended: 2, PeakCalls: 2, PeakHolders: 1, WaitP50: ms(50), WaitMax: ms(50)}}},
		{"keys apart", []chaos.Hold{
			queued("a", 1, 0, 1, 10), queued("b", 2, 2, 3, 20), queued("a", 3, 5, 10, 12),
		}, []chaos.KeyLoad{
			{Key: "a", Acquisitions: 2, Holders: 2, Contended: 1, PeakCalls: 1, PeakHolders: 1, WaitP50: ms(1), WaitMax: ms(5)},
			{Key: "b", Acquisitions: 1, Holders: 1, PeakCalls: 1, PeakHolders: 1, WaitP50: ms(1), WaitMax: ms(1)},
		}},
		{"an empty tenure meets nothing", []chaos.Hold{
			queued("k", 1, 0, 1, 10), queued("k", 2, 20, 30, 15), queued("k", 3, 25, 31, 40),
		}, []chaos.KeyLoad{{Key: "k", Acquisitions: 3, Holders: 3, Contended: 1, PeakCalls: 2, PeakHolders: 1, WaitP50: ms(6), WaitMax: ms(10)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := chaos.Check(chaos.History{Holds: tc.holds, Final: map[string]int64{"writes only": 0}})
			assert.Equal(t, tc.want, r.Load)
		})
	}
}

package sim

import (
	"slices"
	"testing"
)

// One seed gives one history: run twice, each of a few seeds (faults
// included) gives the same digest and the same events.
func TestSameSeedSameHistory(t *testing.T) {
	faults := 0
	for seed := uint64(1); seed <= 3; seed++ {
		a, b := runSeed(t, seed, Safe), runSeed(t, seed, Safe)
		if a.Digest != b.Digest || !slices.Equal(a.History, b.History) {
			t.Errorf("seed %d: digests %s and %s differ; first run:\n%v\nsecond run:\n%v", seed, a.Digest, b.Digest, a.History, b.History)
		}
		if len(a.Violations) > 0 {
			t.Errorf("seed %d: %v", seed, a.Violations)
		}
		faults += a.Faults
	}
	if faults == 0 {
		t.Errorf("the seeds drew no fault: the test shows nothing")
	}
}

// The negative control is caught within its budget: with the restart
// quarantine off while nodes restart empty, some seed of 130 to 139 shows
// two holders at once (seeds 137 and 139 did when the workloads of every
// kind came in: a node without persistence restarted empty and counted at
// once).
func TestUnsafeSettingIsCaught(t *testing.T) {
	if raceOn {
		t.Skip("under -race the seeds' schedule may differ (docs/simulation.md); make sim-unsafe runs without it")
	}
	for seed := uint64(130); seed < 140; seed++ {
		if rep := runSeed(t, seed, NoQuarantine); len(rep.Violations) > 0 {
			t.Logf("seed %d: %s", seed, rep.Violations[0])
			return
		}
	}
	t.Errorf("no violation in seeds 130 to 139 with the quarantine off")
}

// A waiter that gave back grants its lock could not confirm counted them
// again when a later round found the key still holding its token, and the
// give-back, still on its way, deleted the key under the new lock
// (internal/wait, onReply). With that fix reverted, seed 1874 shows two
// leaders at once (an election's campaigners wait as Lock's waiters do);
// seeds 1138 and 137 showed two holders before the workloads of every kind.
func TestGivenBackGrantsDoNotMakeASecondHolder(t *testing.T) {
	for _, seed := range []uint64{1874} {
		if rep := runSeed(t, seed, Safe); len(rep.Violations) > 0 {
			t.Errorf("seed %d: %v", seed, rep.Violations)
		}
	}
}

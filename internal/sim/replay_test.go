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
// quarantine off while nodes restart empty, some seed of 255 to 274 shows
// two holders at once (seed 264 did when the test was written: node 0,
// without persistence, restarted empty and counted at once). Seed 28 did
// before the fix of a waiter's given-back grants (internal/wait, onReply),
// and no longer does.
func TestUnsafeSettingIsCaught(t *testing.T) {
	if raceOn {
		t.Skip("under -race seed 264's schedule may differ (docs/simulation.md); make sim-unsafe runs without it")
	}
	for seed := uint64(255); seed < 275; seed++ {
		if rep := runSeed(t, seed, NoQuarantine); len(rep.Violations) > 0 {
			t.Logf("seed %d: %s", seed, rep.Violations[0])
			return
		}
	}
	t.Errorf("no violation in seeds 255 to 274 with the quarantine off")
}

// Seeds 1138 and 137 once gave two holders at once: a waiter gave back
// grants its lock could not confirm, then counted them again when a later
// round found the key still holding its token, and the give-back, still on
// its way, deleted the key under the new lock (internal/wait, onReply).
func TestGivenBackGrantsDoNotMakeASecondHolder(t *testing.T) {
	for _, seed := range []uint64{1138, 137} {
		if rep := runSeed(t, seed, Safe); len(rep.Violations) > 0 {
			t.Errorf("seed %d: %v", seed, rep.Violations)
		}
	}
}

package pool

import (
	"testing"
	"time"
)

// Two dials' reads handled out of order: the read of the first run, which
// was declared fresh, must not replace the read of the run that replaced
// it, or connections to the new, empty run would count at once.
func TestDialIdentityKeepsTheStricterOfTwoRuns(t *testing.T) {
	now := time.Now()
	first := Identity{RunID: "r0", FreshStart: true, Started: now.Add(-time.Minute), Learned: now}
	second := Identity{RunID: "r1", Started: now, Learned: now.Add(time.Millisecond)}
	d := &dialIdentity{settled: true}
	d.learn(second, true)
	d.learn(first, true)
	if got, _ := d.Identity(); got.RunID != "r1" {
		t.Fatalf("a late read of the first run replaced the new run's: %s", got.RunID)
	}
}

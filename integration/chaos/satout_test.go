package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Each restarted run sits out until the first client counts it again;
// later reports of the same run (other clients) and reports of another
// node or a later run of the same node are told apart.
func TestSatOut(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	var n nodeReports
	n.returns = []nodeReturn{
		{addr: "a", at: t0.Add(3 * time.Second), age: 3 * time.Second},                      // a's run started at t0
		{addr: "a", at: t0.Add(5 * time.Second), age: 5*time.Second + 300*time.Millisecond}, // same run, later client
		{addr: "b", at: t0.Add(4 * time.Second), age: 4 * time.Second},
		{addr: "a", at: t0.Add(40 * time.Second), age: 2 * time.Second}, // a's next run
	}
	assert.ElementsMatch(t, []time.Duration{3 * time.Second, 4 * time.Second, 2 * time.Second}, n.satOut())

	r := Result{SatOut: n.satOut()}
	assert.Contains(t, r.Summary(), "failover_rounds=0 restarts_returned=3 sat_out_p50=3s sat_out_max=4s |")
	assert.NotContains(t, Result{}.Summary(), "sat_out", "no restart returned: nothing said")
}

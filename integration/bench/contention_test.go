//go:build benchreport

package bench

import (
	"strings"
	"testing"

	"github.com/redlockgo/redlock/integration/cluster"
)

// TestContention runs only the contention scenario (healthy and under
// faults) and logs its tables and targets, without writing the report: for
// working on the wait path.
//
//	cd integration && go test -tags benchreport ./bench -run '^TestContention$' -count=1 -v
func TestContention(t *testing.T) {
	cfg := DefaultConfig()
	if testing.Short() {
		cfg = QuickConfig()
	}
	c := cluster.Start(t)
	res := &Results{Config: cfg, Machine: describeMachine(c)}
	res.Contention, res.Faulted, res.Contended = runContention(t, c, cfg)
	var b strings.Builder
	res.contentionTable(&b)
	res.faultTable(&b)
	res.targetTable(&b) // with no latency scenario, the contention targets only
	t.Log("\n" + b.String())
}

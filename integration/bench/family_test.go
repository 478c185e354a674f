//go:build benchreport

package bench

import (
	"strings"
	"testing"

	"github.com/redlockgo/redlock/integration/cluster"
)

// TestFamily runs only the lock family scenario (TryLock, TryLockAll over 4
// keys and TryRLock, uncontended, interleaved) and logs its table, without
// writing the report: for working on those calls.
//
//	cd integration && go test -tags benchreport ./bench -run '^TestFamily$' -count=1 -v
func TestFamily(t *testing.T) {
	cfg := DefaultConfig()
	if testing.Short() {
		cfg = QuickConfig()
	}
	c := cluster.Start(t)
	res := &Results{Config: cfg, Machine: describeMachine(c), Family: runFamily(t, c, cfg)}
	var b strings.Builder
	res.familyTable(&b)
	t.Log("\n" + b.String())
	for _, call := range familyCalls {
		if s := res.Family.Series[call]; len(s.lat) == 0 {
			t.Errorf("%s: no successful operation of %d (first error: %v)", call, s.ops, s.firstErr)
		}
	}
}

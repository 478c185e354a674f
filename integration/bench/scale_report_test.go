//go:build benchreport

package bench

import (
	"strings"
	"testing"
)

// TestScale runs only the scale row (3 clusters of 3 masters against 3
// single nodes) and logs its table, without writing the report:
//
//	cd integration && go test -tags benchreport ./bench -run '^TestScale$' -count=1 -v
func TestScale(t *testing.T) {
	cfg := DefaultConfig()
	if testing.Short() {
		cfg = QuickConfig()
	}
	res := &Results{Config: cfg, Scale: runScale(t, cfg)}
	var b strings.Builder
	res.scaleTable(&b)
	t.Log("\n" + b.String())
}

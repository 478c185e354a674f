package cluster_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/redlockgo/redlock/integration/cluster"
)

// TestMain runs the tests with reuse of clusters (the kept ones are removed
// before the leak check).
func TestMain(m *testing.M) {
	code := cluster.Reuse(m.Run)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

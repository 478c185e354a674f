//go:build benchreport

package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redlockgo/redlock/integration/cluster"
)

// EnvOut names the directory TestReport writes performance.md and the plot
// into; TestReport is skipped without it. A relative path is taken from the
// integration module's root (where `make bench` runs), not from this
// package's directory, where go test runs the test.
const EnvOut = "REDLOCK_BENCH_OUT"

// TestReport runs every scenario once on five fresh nodes and writes the
// report: `make bench`. With -short it runs a few rounds only, to check the
// machinery. It asserts nothing about speed.
func TestReport(t *testing.T) {
	dir := os.Getenv(EnvOut)
	if dir == "" {
		t.Skipf("set %s to a directory (e.g. ../docs) to run the benchmarks and write the report", EnvOut)
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", dir)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("%s=%s: not a directory", EnvOut, os.Getenv(EnvOut))
	}
	cfg := DefaultConfig()
	if testing.Short() {
		cfg = QuickConfig()
	}
	c := cluster.Start(t)
	res := Measure(t, c, cfg)
	var b strings.Builder
	res.Markdown(&b)
	t.Log("\n" + b.String())
	if err := res.WriteDoc(dir); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s and %s", filepath.Join(dir, DocFile), filepath.Join(dir, PlotFile))
}

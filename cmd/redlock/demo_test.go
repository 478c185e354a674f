package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// demo runs "redlock demo" in-process.
func demo(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := demoMain(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	require.Empty(t, stderr.String())
	return code, stdout.String()
}

// tableRow returns the two columns of the demo's table row name: without a
// lock, with Redlock.
func tableRow(t *testing.T, out, name string) (unlocked, locked string) {
	t.Helper()
	for line := range strings.Lines(out) {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			if f := strings.Fields(rest); len(f) == 2 {
				return f[0], f[1]
			}
		}
	}
	t.Fatalf("no row %q in:\n%s", name, out)
	return "", ""
}

// The unlocked sale oversells only by chance (it nearly always does), so
// only its report is checked; the locked sale must be exact every time.
func checkDemo(t *testing.T, code int, out string, tickets string) {
	t.Helper()
	require.Equal(t, exitOK, code, out)
	assert.Contains(t, out, "1) Without a lock")
	assert.Contains(t, out, "Without a lock: ")
	unlocked, _ := tableRow(t, out, "sales recorded")
	assert.NotEqual(t, "-", unlocked, "the unlocked sale failed")
	for row, want := range map[string]string{
		"tickets for sale":            tickets,
		"sales recorded":              tickets,
		"tickets gone by the counter": tickets,
		"oversold":                    "0",
		"most sales of one seat":      "1",
	} {
		_, locked := tableRow(t, out, row)
		assert.Equal(t, want, locked, "row %q with Redlock", row)
	}
	assert.Contains(t, out, "With Redlock: exact: "+tickets+" sold, 0 oversold")
}

// Not parallel: the demo keeps the CPUs busy by design.
func TestDemoInProcess(t *testing.T) {
	code, out := demo(t)
	checkDemo(t, code, out, "100")
	assert.Contains(t, out, "killed")
	assert.Contains(t, out, "with one of the 5 lock nodes killed halfway")
}

func TestDemoOnRealNodes(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	code, out := demo(t, "--nodes", nodes.urls, "--tickets", "40", "--workers", "4")
	checkDemo(t, code, out, "40")
	assert.Contains(t, out, "3 Redis nodes from --nodes")
	nodes.requireFree(t, demoLockKey)
}

func TestDemoUnreachableNodes(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	for _, s := range nodes.servers[:2] {
		s.Kill()
	}
	var stdout, stderr bytes.Buffer
	code := demoMain(context.Background(), []string{"--nodes", nodes.urls}, strings.NewReader(""), &stdout, &stderr)
	require.Equal(t, exitUnavailable, code)
	assert.Contains(t, stderr.String(), "2 of 3 nodes unreachable")
}

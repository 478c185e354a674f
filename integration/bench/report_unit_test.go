package bench

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests check the statistics and the report's machinery on made-up
// figures; they need no Redis.

func ms(v ...float64) durations {
	out := make(durations, len(v))
	for i, x := range v {
		out[i] = time.Duration(x * float64(time.Millisecond))
	}
	return out
}

func TestQuantile(t *testing.T) {
	d := ms(5, 1, 4, 2, 3, 10, 9, 8, 7, 6) // 1..10 shuffled
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{
		{0.01, time.Millisecond},
		{0.5, 5 * time.Millisecond},
		{0.51, 6 * time.Millisecond},
		{0.99, 10 * time.Millisecond},
		{1, 10 * time.Millisecond},
	} {
		assert.Equal(t, tc.want, d.quantile(tc.q), "q=%v", tc.q)
	}
	assert.Equal(t, 10*time.Millisecond, d.max())
	assert.Equal(t, ms(5, 1, 4, 2, 3, 10, 9, 8, 7, 6), d, "quantile must not reorder its input")
	assert.Equal(t, time.Duration(-1), durations(nil).quantile(0.5))
	assert.Equal(t, time.Duration(-1), durations(nil).max())
}

func TestFormat(t *testing.T) {
	assert.Equal(t, "0.412 ms", fmtDur(412*time.Microsecond))
	assert.Equal(t, "42.0 ms", fmtDur(42*time.Millisecond))
	assert.Equal(t, "6012 ms", fmtDur(6012*time.Millisecond))
	assert.Equal(t, "n/a", fmtDur(-1))
	assert.Equal(t, "0.8x", fmtRatio(ratio(4, 5))[:3]+"x")
	assert.Equal(t, "n/a", fmtRatio(ratio(1, 0)))
	assert.True(t, math.IsNaN(ratio(-1, 2)))
}

func TestSplice(t *testing.T) {
	doc := "# Title\n\nprose before\n\n" + beginMarker + "\nold table\n" + endMarker + "\n\nprose after\n"
	got := splice(doc, "new table\n")
	assert.Equal(t, "# Title\n\nprose before\n\n"+beginMarker+"\nnew table\n"+endMarker+"\n\nprose after\n", got)
	assert.Equal(t, got, splice(got, "new table\n"), "splicing is idempotent")

	appended := splice("# Title\n", "table\n")
	assert.Equal(t, "# Title\n\n"+beginMarker+"\ntable\n"+endMarker+"\n", appended)
	assert.Equal(t, beginMarker+"\ntable\n"+endMarker+"\n", splice("", "table\n"))
}

func TestCDFPoints(t *testing.T) {
	pts := cdfPoints(ms(3, 1, 2))
	require.Len(t, pts, 6)
	assert.Equal(t, 1.0, pts[0].X)
	assert.Equal(t, 0.0, pts[0].Y)
	assert.Equal(t, 3.0, pts[5].X)
	assert.Equal(t, 1.0, pts[5].Y)

	many := make(durations, 10_000)
	for i := range many {
		many[i] = time.Duration(i+1) * time.Microsecond
	}
	pts = cdfPoints(many)
	assert.LessOrEqual(t, len(pts), 2*(maxPoints+1))
	assert.Equal(t, 1.0, pts[len(pts)-1].Y, "the largest value is kept")
}

// fakeResults is a run with made-up figures in every table.
func fakeResults() *Results {
	lat := func(name string, fault bool, scale float64) *LatencyResult {
		l := &LatencyResult{Name: name, Route: viaProxy, Series: map[string]*series{}}
		if fault {
			l.Fault, l.Probe = "made up", "a new client's PING: refused"
		}
		for i, impl := range implementations {
			s := &series{lat: ms(scale*float64(i+1), 2*scale*float64(i+1)), ops: 2}
			if name == "uncontended, no proxy" {
				l.Route = direct
				s.mallocs, s.bytes, s.measured = uint64(100*(i+1)), uint64(9000*(i+1)), 1
			}
			l.Series[impl] = s
		}
		return l
	}
	r := &Results{Config: QuickConfig(), Machine: Machine{CPUs: 2, CPU: "test CPU", Redis: "7.0.15", Backend: "processes"}}
	r.Latency = []*LatencyResult{
		lat("uncontended", false, 0.4), lat("uncontended, no proxy", false, 0.3),
		lat("one node +20ms", true, 1), lat("one node blackholed", true, 1), lat("one node down", true, 1),
	}
	r.Contention = []string{oursShared, oursSharedFair, Redsync}
	r.Contended = map[string]*contended{
		oursShared:     {waits: ms(1, 2, 20), acquired: 300},
		oursSharedFair: {waits: ms(1, 3, 30), acquired: 250},
		Redsync:        {waits: ms(0.001, 100, 1500), acquired: 200, gaveUp: 3},
	}
	r.Throughput = map[string]*rate{
		Ours: {ops: 1000, elapsed: time.Second}, Redsync: {ops: 800, elapsed: time.Second}, Floor: {ops: 1100, elapsed: time.Second},
	}
	return r
}

func TestMarkdown(t *testing.T) {
	var b strings.Builder
	fakeResults().Markdown(&b)
	md := b.String()
	for _, want := range []string{
		"| uncontended | p50 | 0.4 ms | 0.8 ms | 1.20 ms | 0.5x | 0.333x |",
		"|  | allocs/op | 100 | 200 | 300 | 0.5x | 0.333x |",
		"|  | operations (errors) | 2 (0) | 2 (0) | 2 (0) |  |  |",
		"| uncontended p50 ≤ 0.8x redsync | 0.5x | met |",
		"| allocations per lock+unlock ≤ 0.5x redsync | 0.5x | met |",
		"| " + oursShared + " | 300 | 2.00 ms | 20.0 ms | 20.0 ms | 0 | 1.50x |",
		"| " + Ours + " | 1000 | 0 | 1.25x | 0.909x |",
		"- one node down: the last node: made up; a new client's PING: refused.",
		PlotFile,
	} {
		assert.Contains(t, md, want)
	}
	assert.NotContains(t, md, "NaN")
}

func TestWriteDoc(t *testing.T) {
	dir := t.TempDir()
	prose := "# Performance\n\nprose\n\n" + beginMarker + "\n" + endMarker + "\n\nmore prose\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, DocFile), []byte(prose), 0o644))
	require.NoError(t, fakeResults().WriteDoc(dir))

	doc, err := os.ReadFile(filepath.Join(dir, DocFile))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(doc), "# Performance\n\nprose\n\n"+beginMarker+"\n"))
	assert.True(t, strings.HasSuffix(string(doc), endMarker+"\n\nmore prose\n"))
	assert.Contains(t, string(doc), "#### Targets")

	img, err := os.ReadFile(filepath.Join(dir, PlotFile))
	require.NoError(t, err)
	cfg, err := png.DecodeConfig(bytes.NewReader(img))
	require.NoError(t, err)
	assert.Greater(t, cfg.Width, 1000)
}

package bench

import (
	"bytes"
	"errors"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
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
	r.Contention = []string{oursShared, oursRueidis, oursSharedFair, oursMany, oursManyFair, Redsync}
	r.Faulted = []string{faultedName(blackholedName), faultedName(slowName(20 * time.Millisecond))}
	r.Contended = map[string]*contended{
		oursShared:     {waits: ms(1, 2, 20), acquired: 300, holds: ms(1, 1.2, 5)},
		oursRueidis:    {waits: ms(1, 2, 10), acquired: 320},
		oursSharedFair: {waits: ms(1, 3, 30), acquired: 250},
		oursMany:       {waits: ms(5, 40, 100), acquired: 100},
		oursManyFair:   {waits: ms(5, 20, 50), acquired: 120},
		Redsync:        {waits: ms(0.001, 100, 1500), acquired: 200, gaveUp: 3, holds: ms(1.1, 1.1, 1.1)},
		// One node faulty: the silent one within both targets, the slow one
		// short of acquisitions (0.5x), its p99 right at the limit (2x).
		faultedName(blackholedName):                  {waits: ms(6, 50, 150), acquired: 90, gaveUp: 1, late: 2, latest: 9400 * time.Millisecond},
		faultedName(slowName(20 * time.Millisecond)): {waits: ms(20, 100, 200), acquired: 50, unfinished: 1},
	}
	r.Throughput = map[string]*rate{
		Ours: {ops: 1000, elapsed: time.Second}, Redsync: {ops: 800, elapsed: time.Second}, Floor: {ops: 1100, elapsed: time.Second},
	}
	r.Family = &FamilyResult{Route: direct, Series: map[string]*series{
		familyTryLock:    {lat: ms(0.4, 0.8), ops: 2, mallocs: 100, bytes: 9000, measured: 2},
		familyTryLockAll: {lat: ms(0.6, 1.6), ops: 3, errs: 1, firstErr: errors.New("redlock: lock not obtained"), mallocs: 300, bytes: 27000, measured: 3},
		familyTryRLock:   {lat: ms(0.5, 1.2), ops: 2},
	}}
	r.Scale = &ScaleResult{
		Rates: map[string]*rate{
			scaleSingle:  {ops: 4000, elapsed: 2 * time.Second},
			scaleCluster: {ops: 3000, errs: 1, elapsed: 2 * time.Second, firstErr: errors.New("made up\nerror")},
		},
		Shares: map[string][]float64{
			scaleSingle:  {0.2, 0.2, 0.1},
			scaleCluster: {0.1, 0.1, 0.1, 0.05, 0.1, 0.1, 0.1, 0.1, 0.15},
		},
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
		"the measured holds' medians ranged from 1.10 ms to 1.20 ms over the variants.",
		"| variant | acquisitions | wait p50 | wait p99 | wait max | Lock calls given up | acquisitions / healthy | p99 / healthy | max / healthy |",
		"| " + oursMany + " | 100 | 40.0 ms | 100 ms | 100 ms | 0 | 1.00x | 1.00x | 1.00x |",
		"| " + oursMany + ", one node blackholed | 90 | 50.0 ms | 150 ms | 150 ms | 1 | 0.9x | 1.50x | 1.50x |",
		"| " + oursMany + ", one node +20ms | 50 | 100 ms | 200 ms | 200 ms | 0 | 0.5x | 2.00x | 2.00x |",
		"- " + oursMany + ", one node +20ms: 1 waits still unfinished 10s after their slice (counted as lower bounds).",
		"- " + oursMany + ", one node blackholed: 2 Lock calls returned more than 1s after their context's deadline, the latest by 9.4s.",
		"| " + oursMany + ", one node blackholed: acquisitions ≥ 0.8x healthy 8 Clients | 0.9x | met |",
		"| " + oursMany + ", one node +20ms: wait p99 ≤ 2x healthy 8 Clients | 2.00x | met |",
		"| " + Ours + " | 1000 | 0 | 1.25x | 0.909x |",
		"- one node down: the last node: made up; a new client's PING: refused.",
		"| call | p50 | p99 | max | allocs/op | bytes/op | operations (errors) | p50 / TryLock (1 key) | p99 / TryLock (1 key) |",
		"| TryLock (1 key) | 0.4 ms | 0.8 ms | 0.8 ms | 50.0 | 4500 | 2 (0) | 1.00x | 1.00x |",
		"| TryLockAll (4 keys) | 0.6 ms | 1.60 ms | 1.60 ms | 100 | 9000 | 3 (1) | 1.50x | 2.00x |",
		"| TryRLock (1 key) | 0.5 ms | 1.20 ms | 1.20 ms | n/a | n/a | 2 (0) | 1.25x | 1.50x |",
		"- TryLockAll (4 keys)'s first error: redlock: lock not obtained.",
		"| " + scaleSingle + " | 2000 | 0 | 1.00x | 3 | 20 20 10 | 20% | 50% |",
		"| " + scaleCluster + " | 1500 | 1 | 0.75x | 9 | 10 10 10 / 5 10 10 / 10 10 15 | 15% | 90% |",
		"- " + scaleCluster + "'s first error: made up; error.",
		PlotFile,
	} {
		assert.Contains(t, md, want)
	}
	assert.NotContains(t, md, "NaN")
}

// A run without the family scenario (TestContention's) writes no family
// table, and a family run missing its TryLock base prints no ratio.
func TestFamilyTableEdges(t *testing.T) {
	r := fakeResults()
	r.Family = nil
	var b strings.Builder
	r.Markdown(&b)
	assert.NotContains(t, b.String(), "lock family")

	r.Family = &FamilyResult{Route: direct, Series: map[string]*series{familyTryRLock: {lat: ms(0.5), ops: 1}}}
	b.Reset()
	r.familyTable(&b)
	assert.Contains(t, b.String(), "| TryRLock (1 key) | 0.5 ms | 0.5 ms | 0.5 ms | n/a | n/a | 1 (0) | n/a | n/a |")
	assert.NotContains(t, b.String(), "NaN")
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

// reportedRows returns the first cell of every table row in md.
func reportedRows(md string) map[string]bool {
	out := make(map[string]bool)
	for line := range strings.SplitSeq(md, "\n") {
		if cells := strings.Split(line, " | "); strings.HasPrefix(line, "| ") && len(cells) > 1 {
			out[strings.TrimPrefix(cells[0], "| ")] = true
		}
	}
	return out
}

// Every variant the run measured has a row, and every variant but redsync
// has its targets: the report iterates Contention and Faulted, which
// runContention fills from the very entrants it measures.
func TestEveryContentionVariantReported(t *testing.T) {
	r := fakeResults()
	var b strings.Builder
	r.Markdown(&b)
	rows := reportedRows(b.String())
	goals := make(map[string]int)
	for _, tg := range r.targets() {
		name, _, _ := strings.Cut(tg.goal, ": ")
		goals[name]++
	}
	for _, name := range append(slices.Clone(r.Contention), r.Faulted...) {
		assert.True(t, rows[name], "no row for %q", name)
		if name != Redsync {
			assert.Equal(t, 2+btoi(!slices.Contains(r.Faulted, name)), goals[name], "targets of %q", name)
		}
	}
	assert.Len(t, r.Contention, 6)
	assert.Len(t, r.Faulted, 2)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// faultTargets returns the targets of the faulted variant name, by goal.
func faultTargets(r *Results, name string) map[string]target {
	out := make(map[string]target)
	for _, tg := range r.targets() {
		if goal, ok := strings.CutPrefix(tg.goal, name+": "); ok {
			out[goal] = tg
		}
	}
	return out
}

func TestFaultTargets(t *testing.T) {
	const acqGoal, p99Goal = "acquisitions ≥ 0.8x healthy 8 Clients", "wait p99 ≤ 2x healthy 8 Clients"
	healthy := &contended{waits: ms(10, 20, 100), acquired: 100} // p99 100ms
	for _, tc := range []struct {
		name               string
		faulted            *contended
		healthyMissing     bool
		acqMet, p99Met     bool
		acqShown, p99Shown string
	}{
		{name: "both met", faulted: &contended{waits: ms(10, 20, 150), acquired: 95},
			acqMet: true, p99Met: true, acqShown: "0.95x", p99Shown: "1.50x"},
		{name: "exactly at both limits", faulted: &contended{waits: ms(10, 20, 200), acquired: 80},
			acqMet: true, p99Met: true, acqShown: "0.8x", p99Shown: "2.00x"},
		{name: "just past both limits", faulted: &contended{waits: ms(10, 20, 201), acquired: 79},
			acqShown: "0.79x", p99Shown: "2.01x"},
		{name: "more acquisitions than healthy, p99 far off", faulted: &contended{waits: ms(1, 2, 900), acquired: 130},
			acqMet: true, acqShown: "1.30x", p99Shown: "9.00x"},
		{name: "no acquisition, no wait", faulted: &contended{},
			acqShown: "0x", p99Shown: "n/a"},
		{name: "no healthy row to compare with", faulted: &contended{waits: ms(10), acquired: 100}, healthyMissing: true,
			acqShown: "n/a", p99Shown: "n/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := faultedName(blackholedName)
			r := &Results{Config: QuickConfig(), Contention: []string{oursMany}, Faulted: []string{name},
				Contended: map[string]*contended{oursMany: healthy, name: tc.faulted}}
			if tc.healthyMissing {
				r.Contention = nil
				delete(r.Contended, oursMany)
			}
			got := faultTargets(r, name)
			require.Len(t, got, 2)
			assert.Equal(t, tc.acqMet, got[acqGoal].met, "acquisitions")
			assert.Equal(t, tc.acqShown, got[acqGoal].measured)
			assert.Equal(t, tc.p99Met, got[p99Goal].met, "p99")
			assert.Equal(t, tc.p99Shown, got[p99Goal].measured)
		})
	}
}

// The fault table stays out of a report without faulted variants, and a
// missing healthy row leaves its ratios n/a rather than failing.
func TestFaultTableEdges(t *testing.T) {
	r := fakeResults()
	r.Faulted = nil
	var b strings.Builder
	r.faultTable(&b)
	assert.Empty(t, b.String())

	r = fakeResults()
	delete(r.Contended, oursMany)
	b.Reset()
	r.faultTable(&b)
	assert.Contains(t, b.String(), "| "+faultedName(blackholedName)+" | 90 | 50.0 ms | 150 ms | 150 ms | 1 | n/a | n/a | n/a |")
	assert.NotContains(t, b.String(), "| "+oursMany+" |")
}

func TestCDFPanelWithoutData(t *testing.T) {
	p, err := cdfPanel("empty", []curve{{name: Ours}, {name: Redsync}})
	if err != nil {
		t.Fatal(err)
	}
	if p.X.Min <= 0 {
		t.Fatalf("an empty panel's log axis starts at %v: drawing it would panic", p.X.Min)
	}
	img := vgimg.New(vg.Centimeter*10, vg.Centimeter*8)
	p.Draw(draw.New(img)) // a scenario with no successful operation still plots
}

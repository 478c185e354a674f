package redlock_test

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// How the package's tests share the machine. Most of them spend their time
// waiting on real Redis (TTLs running out, lock-delays, quarantines,
// restarts), so they run in parallel; what they must not share is the CPU
// at the moments their bounds are tight. Each test is one of:
//
//   - serial (no call): go test runs them first, one at a time. Unit
//     tests on in-memory nodes, and short real-Redis tests whose bound is
//     tight.
//   - parallel(t): the wait-bound tests, at most parallelWaits at a time
//     (a slot each).
//   - first(t): a parallel(t) test that is among the run's longest: it
//     gets a slot before any parallel(t) test does, so that the run does
//     not last as long as the others plus it, as when it drew a slot late.
//     One whose end is a long wait the test's configuration sets (the
//     failover scenarios' 22s quarantine, polled every 100ms) gives its
//     slot back when it starts that wait (slot.idle).
//   - alone(t): the longer tests whose bound is tight for a loaded machine
//     (a contended Unlock at the default node timeout, a keeper at 100ms
//     nodes, a 1000-key multi-lock, the rate of split rounds): they run
//     one at a time once every parallel test has ended or gone idle,
//     beside those idle waits only, instead of before them all. One whose
//     setup is long and not tight (clusters to start) starts as a
//     parallel(t) test and calls alone on its slot once set up.
//
//   - virtual(t): a test whose body runs in testing/synctest bubbles
//     (virtual time, the kit's in-process nodes): no load moves its
//     bounds, so it runs in parallel outside the slots, using the CPU
//     while the others wait on Redis.
//
// With -parallel on the command line, that many tests hold a slot at once,
// go test's own bound is left as given, and alone(t) tests run serially.

// parallelWaits is how many tests hold a slot at once when -parallel is
// not given. One run of the package used about half of one core with 8 at
// a time (the parallel part of a run: 53s with 4, 38s with 8; 16 failed a
// 100ms TTL test under its own load, and 12 failed miniredis calls and
// hand-offs within a node timeout of 1s beside other builds). At -cpu 1,2
// on a quiet two-core machine the parallel parts of both passes took 74s
// with 8, 57s with 10 and 64s with 12, one run each (the tests' time in
// their slots rose by a quarter from 10 to 12: they slowed each other
// down), so 10. The whole package took 114-129s in five runs with 10,
// 133-137s in two with 8.
// The default, GOMAXPROCS, would run two at a time here. Those with a
// bound of 1s while nodes are silent run in parallel: they held it under
// load averages of 8-16 from other builds.
const parallelWaits = 10

var (
	slots schedule
	// ownSlots is set when go test's bound was lifted (no -parallel).
	ownSlots bool
	// aloneMu lets one alone(t) test run at a time.
	aloneMu sync.Mutex
)

// schedule hands out the slots.
type schedule struct {
	mu    sync.Mutex
	cond  sync.Cond
	free  int // slots not held
	first int // first(t) tests counted and still without a slot
	// left counts the parallel tests of this run that hold or wait for a
	// slot: each is counted before its t.Parallel, in go test's serial
	// part, so the count is complete when any parallel test goes on.
	left sync.WaitGroup
}

// waitBoundParallel sets the slots to parallelWaits, or to -parallel when
// the command line set it. Without -parallel, go test's own bound
// (-test.parallel) is lifted above the number of parallel tests: go test
// hands its slots out in no set order, and the slots here put the first(t)
// tests first; and an alone(t) test holds a slot of go test's while it
// waits for the parallel tests to end.
func waitBoundParallel() {
	flag.Parse()
	n, set := parallelWaits, false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			n, _ = strconv.Atoi(f.Value.String())
			set = true
		}
	})
	if !set {
		_ = flag.Set("test.parallel", "1000")
		ownSlots = true
	}
	slots.cond.L = &slots.mu
	slots.free = max(n, 1)
}

// slot is a parallel test's hold of one of the slots.
type slot struct{ once sync.Once }

// idle gives the slot back before the test ends: from here on it only
// waits (see above). It is safe to call more than once.
func (s *slot) idle() {
	s.once.Do(func() {
		slots.mu.Lock()
		slots.free++
		slots.mu.Unlock()
		slots.cond.Broadcast()
		slots.left.Done()
	})
}

// take runs t in parallel, holding a slot, which goes back when t and its
// cleanups (its servers' ends) are done, unless idle gave it back before.
func take(t *testing.T, first bool) *slot {
	t.Helper()
	slots.left.Add(1)
	if first {
		slots.mu.Lock()
		slots.first++
		slots.mu.Unlock()
	}
	t.Parallel()
	slots.mu.Lock()
	for slots.free == 0 || (!first && slots.first > 0) {
		slots.cond.Wait()
	}
	slots.free--
	if first {
		slots.first--
	}
	slots.mu.Unlock()
	slots.cond.Broadcast()
	s := &slot{}
	t.Cleanup(s.idle)
	return s
}

// parallel runs t in parallel with the package's other wait-bound tests,
// holding one of the slots (see above). A test whose cleanups only wait
// (a Client's Close waiting out calls to silent nodes, 4 node timeouts)
// gives the slot back when its function returns: defer parallel(t).idle().
func parallel(t *testing.T) *slot {
	t.Helper()
	return take(t, false)
}

// first is parallel for one of the run's longest tests: it gets its slot
// before the parallel(t) tests (see above).
func first(t *testing.T) *slot {
	t.Helper()
	return take(t, true)
}

// virtual runs t, whose body runs in synctest bubbles, in parallel
// outside the slots (see above).
func virtual(t *testing.T) {
	t.Helper()
	t.Parallel()
}

// alone runs t by itself after every parallel test has ended or gone
// idle, beside those idle waits only (see above); serially, before the
// parallel tests, when -parallel was given. Its turn ends when t and its
// cleanups are done, or when the function it returns is called: a test
// whose cleanups only wait (Clients' Close waiting out the calls to a
// silent node) lets the next alone test go when its function returns,
// with defer alone(t)().
func alone(t *testing.T) func() {
	t.Helper()
	if !ownSlots {
		return func() {}
	}
	t.Parallel()
	slots.left.Wait()
	return aloneTurn(t)
}

// aloneTurn takes the alone tests' turn for t, and returns what gives it
// back (once, whichever of it and t's cleanup comes first).
func aloneTurn(t *testing.T) func() {
	aloneMu.Lock()
	var once sync.Once
	end := func() { once.Do(aloneMu.Unlock) }
	t.Cleanup(end)
	return end
}

// alone is alone(t) for a parallel test whose setup (clusters to start)
// need not be: it gives its slot back, then waits for its turn as an
// alone(t) test does. With -parallel given, it runs beside the other
// parallel tests, one such test at a time.
func (s *slot) alone(t *testing.T) {
	t.Helper()
	s.idle()
	if ownSlots {
		slots.left.Wait()
	}
	aloneTurn(t)
}

// TestParallelTestsTakeASlot: a test that calls t.Parallel itself runs
// beside every other parallel test, outside the slots, since the package
// lifts go test's bound (waitBoundParallel). Its subtests may (they share
// the slot of their test).
func TestParallelTestsTakeASlot(t *testing.T) {
	parallel(t)
	files, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Body == nil {
				continue
			}
			for _, st := range fn.Body.List {
				call, ok := st.(*ast.ExprStmt)
				if !ok {
					continue
				}
				c, ok := call.X.(*ast.CallExpr)
				if !ok {
					continue
				}
				if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Parallel" {
					t.Errorf("%s: %s calls t.Parallel: call parallel(t), first(t), alone(t) or virtual(t) instead "+
						"(schedule_test.go); a test of package redlock cannot, and stays serial",
						fset.Position(st.Pos()), fn.Name.Name)
				}
			}
		}
	}
}

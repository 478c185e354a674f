package redlock_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"go.uber.org/goleak"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/internal/pooltest"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

func TestMain(m *testing.M) {
	if urls := os.Getenv(childEnv); urls != "" {
		os.Exit(runChild(urls))
	}
	waitBoundParallel()
	goleak.VerifyTestMain(probesEnded{m})
}

// probesEnded runs the tests, then waits for go-redis's dial probes to end
// (awaitDialProbes) before goleak.VerifyTestMain looks for leaks.
type probesEnded struct{ m *testing.M }

func (p probesEnded) Run() int {
	code := redistest.Reuse(p.m.Run) // plain servers serve test after test
	awaitDialProbes()
	return code
}

// dialProbeBound bounds how long a go-redis dial probe outlives the Close
// of its pool. A pool whose dials all failed (a killed node or shard)
// probes its node in a loop, (*ConnPool).tryDial in go-redis v9: one dial,
// bounded by the DialTimeout (5s, go-redis's default; the tests' pools set
// none), then a 1s sleep, then a look at whether the pool is closed. A
// probe thus ends within 5s + 1s of Close; the bound doubles that for a
// loaded machine. It costs time only when probes are left.
const dialProbeBound = 2 * (5*time.Second + time.Second)

// awaitDialProbes waits until go-redis's dial probes have ended, once
// every test (and so every pool) is done: the probes of tests that run in
// parallel are in one process, and which probe is whose a stack does not
// tell, so a test cannot wait for its own. The dials that refill a
// pool's MinIdleConns, (*ConnPool).addIdleConn, are waited for alike: they
// run on a context of their own, which a pool's Close does not end (a
// test's slow dialer then lingers 400ms). It only waits: probes still
// running after dialProbeBound are leaks, which the leak check after it
// reports with their stacks.
func awaitDialProbes() {
	buf := make([]byte, 1<<20)
	probing := func() bool {
		stacks := string(buf[:runtime.Stack(buf, true)])
		return strings.Contains(stacks, "(*ConnPool).tryDial") || strings.Contains(stacks, "(*ConnPool).addIdleConn")
	}
	for deadline := time.Now().Add(dialProbeBound); probing(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "go-redis dial probes still running %v after the last test "+
				"(bound: go-redis's 5s DialTimeout and 1s probe pause, doubled): a pool left open?\n", dialProbeBound)
			return
		}
	}
}

// fakeNodes is a set of in-memory Redis nodes behind fault injectors.
type fakeNodes struct {
	servers []*miniredis.Miniredis
	faults  []*pooltest.Faulty
	pools   []pool.Pool
}

// newFakeNodes starts n miniredis servers, each behind a Faulty wrapper; all
// are stopped when t ends.
func newFakeNodes(t testing.TB, n int) *fakeNodes {
	t.Helper()
	fn := &fakeNodes{}
	for range n {
		s := miniredis.RunT(t)
		p, err := pool.FromURL("redis://" + s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		// Its connection is dialled now, past the Faulty wrapper (whose
		// Calls it does not count): a test's first call on fresh nodes,
		// which also dialled, has missed the 1s node timeout on all three
		// on a loaded machine (two CPU hogs, two race builds of this
		// package).
		warm(t, []pool.Pool{p})
		f := pooltest.Wrap(p)
		fn.servers = append(fn.servers, s)
		fn.faults = append(fn.faults, f)
		fn.pools = append(fn.pools, fakePool{f, len(fn.pools), time.Now()})
	}
	return fn
}

// fakePool is a fake node's Pool. It tells the lock its node's identity
// (pool.Identifier) as that of a node that keeps its data, which a
// miniredis server does while it runs: miniredis answers no INFO server,
// and a Pool that tells nothing has its identity read through INFO in its
// scripts, which would report the node unverifiable.
type fakePool struct {
	*pooltest.Faulty
	n       int
	started time.Time
}

// Identity implements pool.Identifier.
func (f fakePool) Identity() (pool.Identity, bool) {
	return pool.Identity{RunID: fmt.Sprintf("fake-%d", f.n), Started: f.started, Persistence: pool.PersistenceAlways, Learned: f.started}, true
}

// identityOf forwards pool.Identifier for a test's wrapper of p: what p
// tells, when it is an Identifier.
func identityOf(p pool.Pool) (pool.Identity, bool) {
	if idr, ok := p.(pool.Identifier); ok {
		return idr.Identity()
	}
	return pool.Identity{}, false
}

// holders counts the nodes where key holds value.
func (fn *fakeNodes) holders(key, value string) int {
	n := 0
	for _, s := range fn.servers {
		if v, err := s.Get(key); err == nil && v == value {
			n++
		}
	}
	return n
}

// present counts the nodes where key exists.
func (fn *fakeNodes) present(key string) int {
	n := 0
	for _, s := range fn.servers {
		if s.Exists(key) {
			n++
		}
	}
	return n
}

// newClient returns a Client over pools that is closed when t ends, with a
// node timeout generous enough for a loaded machine.
func newClient(t testing.TB, pools []pool.Pool, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	opts = append([]redlock.Option{redlock.WithNodeTimeout(time.Second)}, opts...)
	c, err := redlock.New(pools, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newPatientClient is newClient with a 3s node timeout, for a test that
// checks what the nodes hold and answer, not when, and takes locks of 10s
// or more (a kept 10s lock fits it: its validity, 9.9s, exceeds the 6s loss
// margin plus one node timeout). Two CPU hogs and two race builds of this
// package at once have stalled answers past newClient's 1s on two nodes
// of three.
func newPatientClient(t testing.TB, pools []pool.Pool, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	return newClient(t, pools, append([]redlock.Option{redlock.WithNodeTimeout(3 * time.Second)}, opts...)...)
}

// newFakeTimeClient returns a Client on clk over in-process nodes, closed
// when t ends. On a fake clock the node timeout bounds only the real wait
// for a node's answer, never a lock's validity, so it is the longest
// allowed (NodeTimeoutLimit, 5s): a first call on fresh miniredis nodes,
// stalled by a loaded machine (a go test ./... still compiling beside it),
// once took over the 1s of newClient on all three nodes at once. It suits only a test whose locks are not kept
// (a keeper's schedule and loss margin follow the node timeout).
func newFakeTimeClient(t testing.TB, pools []pool.Pool, clk *clock.Fake, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	return newClient(t, pools, append([]redlock.Option{redlock.WithTimeSource(clk), redlock.WithNodeTimeout(redlock.NodeTimeoutLimit)}, opts...)...)
}

// fakeClock returns a fake clock at a fixed instant.
func fakeClock() *clock.Fake { return clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) }

func bg() context.Context { return context.Background() }

var idMu sync.Mutex

func nextID(p *int64) int64 {
	idMu.Lock()
	defer idMu.Unlock()
	*p++
	return *p
}

package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/redlock"
)

// Config bounds a report run. The defaults keep `make bench` to a few
// minutes on a 2-core machine, most of it the redsync operations that wait
// seconds for a silent node.
type Config struct {
	// Rounds and Slice interleave the healthy latency scenarios: each
	// implementation runs for Slice in turn, Rounds times.
	Rounds int
	Slice  time.Duration
	// FaultRounds and FaultSlice do the same with one faulty node.
	FaultRounds int
	FaultSlice  time.Duration
	// RedsyncSilentCap caps redsync's operations with a blackholed node:
	// each takes seconds, since neither its Unlock nor go-redis's default
	// clients bound a call by less than the 3s read timeout.
	RedsyncSilentCap int
	// Slow is the latency added to one node's replies, in the latency
	// scenario and in the faulted contention variant.
	Slow time.Duration

	// Workers take one key in turn for Hold each, ContentionRounds slices
	// of ContentionSlice per variant, the faulted variants included.
	Workers          int
	Hold             time.Duration
	ContentionRounds int
	ContentionSlice  time.Duration
	// Drain bounds how long a wait begun in a contention slice may finish
	// after the slice.
	Drain time.Duration

	// Goroutines lock distinct keys, ThroughputRounds slices of
	// ThroughputSlice per implementation.
	Goroutines       int
	ThroughputRounds int
	ThroughputSlice  time.Duration

	// The scale row runs Goroutines goroutines over 3 single nodes and 3
	// clusters of 3 masters, ScaleRounds slices of ScaleSlice each.
	ScaleRounds int
	ScaleSlice  time.Duration
}

// DefaultConfig is the configuration of `make bench`.
func DefaultConfig() Config {
	return Config{
		Rounds: 20, Slice: 100 * time.Millisecond,
		FaultRounds: 10, FaultSlice: 200 * time.Millisecond,
		RedsyncSilentCap: 5, Slow: 20 * time.Millisecond,
		Workers: 8, Hold: time.Millisecond, ContentionRounds: 2, ContentionSlice: 1500 * time.Millisecond,
		Drain:      10 * time.Second,
		Goroutines: 64, ThroughputRounds: 3, ThroughputSlice: time.Second,
		ScaleRounds: 3, ScaleSlice: time.Second,
	}
}

// QuickConfig is a short run, for checking the machinery (go test -short).
func QuickConfig() Config {
	return Config{
		Rounds: 3, Slice: 50 * time.Millisecond,
		FaultRounds: 2, FaultSlice: 100 * time.Millisecond,
		RedsyncSilentCap: 1, Slow: 20 * time.Millisecond,
		Workers: 8, Hold: time.Millisecond, ContentionRounds: 1, ContentionSlice: 500 * time.Millisecond,
		Drain:      10 * time.Second,
		Goroutines: 64, ThroughputRounds: 1, ThroughputSlice: 300 * time.Millisecond,
		ScaleRounds: 1, ScaleSlice: 300 * time.Millisecond,
	}
}

// Results holds one run's figures.
type Results struct {
	Config     Config
	Machine    Machine
	Latency    []*LatencyResult
	Contention []string // variant names on healthy nodes, in table order
	// Faulted names the variants with one node faulty, in table order:
	// oursMany's 8 Clients with a fault, compared with oursMany.
	Faulted    []string
	Contended  map[string]*contended // by variant, healthy and faulted
	Throughput map[string]*rate      // by implementation
	// Family is the lock family scenario (TryLockAll, TryRLock against
	// TryLock); nil when it did not run.
	Family  *FamilyResult
	Scale   *ScaleResult  // nil when not measured
	Elapsed time.Duration // the measurement, without building or starting nodes
}

// LatencyResult is one latency scenario.
type LatencyResult struct {
	Name   string
	Fault  string // what was done to the faulty node; "" when healthy
	Route  route
	Probe  string // what a new client saw of the faulty node
	Caps   map[string]int
	Series map[string]*series
}

// implementations lists the columns of the latency and throughput tables.
var implementations = []string{Ours, Redsync, Floor}

// faulty is the node the fault scenarios break: the last one.
func faulty(c *cluster.Cluster) *cluster.Node { return c.Node(c.Len() - 1) }

// Fault scenarios shared by the latency and the contention tables.
const blackholedName = "one node blackholed"

// slowName names the scenario with one node's replies d late.
func slowName(d time.Duration) string { return fmt.Sprintf("one node +%v", d) }

// blackhole silences n: connections stay open, nothing is delivered either
// way (toxiproxy closes them when the fault is removed).
func blackhole(n *cluster.Node) error { return n.Blackhole(cluster.Both) }

type latencyScenario struct {
	name, fault string
	route       route
	allocs      bool
	breakNode   func(*cluster.Node) error
	caps        map[string]int
}

// Measure runs every scenario on c, one after the other, with every node
// healthy again between them. It fails tb when the harness does; errors of
// the implementations are counted and reported, not fatal.
func Measure(tb testing.TB, c *cluster.Cluster, cfg Config) *Results {
	tb.Helper()
	start := time.Now()
	res := &Results{Config: cfg, Machine: describeMachine(c)}
	scenarios := []latencyScenario{
		{name: "uncontended", route: viaProxy},
		{name: "uncontended, no proxy", route: direct, allocs: true},
		{name: slowName(cfg.Slow), fault: fmt.Sprintf("Slow(%v): each reply held back", cfg.Slow),
			route: viaProxy, breakNode: func(n *cluster.Node) error { return n.Slow(cfg.Slow) }},
		{name: blackholedName, fault: "Blackhole(Both): connection open, nothing delivered either way",
			route: viaProxy, breakNode: blackhole, caps: map[string]int{Redsync: cfg.RedsyncSilentCap}},
		{name: "one node down", fault: "Partition: proxy closed, new connections refused",
			route: viaProxy, breakNode: func(n *cluster.Node) error { return n.Partition() }},
	}
	for _, s := range scenarios {
		tb.Logf("bench: %s", s.name)
		res.Latency = append(res.Latency, runLatency(tb, c, cfg, s))
	}
	tb.Logf("bench: the lock family")
	res.Family = runFamily(tb, c, cfg)
	tb.Logf("bench: contention")
	res.Contention, res.Faulted, res.Contended = runContention(tb, c, cfg)
	tb.Logf("bench: throughput")
	res.Throughput = runThroughput(tb, c, cfg)
	tb.Logf("bench: scale")
	res.Scale = runScale(tb, cfg)
	res.Elapsed = time.Since(start)
	return res
}

// healthy resets every node and empties it.
func healthy(tb testing.TB, c *cluster.Cluster) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Reset(ctx); err != nil {
		tb.Fatalf("bench: reset: %v", err)
	}
	if err := c.FlushAll(ctx); err != nil {
		tb.Fatalf("bench: flush: %v", err)
	}
}

func closeFleet(tb testing.TB, f *fleet) {
	tb.Helper()
	if err := f.close(); err != nil {
		tb.Errorf("bench: close clients: %v", err)
	}
}

// standard returns the three implementations on f's route.
func standard(tb testing.TB, f *fleet) []entrant {
	tb.Helper()
	ours, err := f.ours()
	if err != nil {
		tb.Fatalf("bench: %v", err)
	}
	return []entrant{one(Ours, ours), one(Redsync, f.redsync()), one(Floor, f.floor())}
}

func runLatency(tb testing.TB, c *cluster.Cluster, cfg Config, s latencyScenario) *LatencyResult {
	tb.Helper()
	healthy(tb, c)
	defer healthy(tb, c)
	f := newFleet(c, s.route)
	defer closeFleet(tb, f)
	es := standard(tb, f)
	// One deadline for the scenario, so that an operation that never ends
	// (a Lock retrying forever) cannot hang the run; the operations
	// themselves allocate no context of their own.
	budget := time.Duration(cfg.Rounds)*cfg.Slice*time.Duration(len(es)) + 2*time.Minute
	if s.breakNode != nil {
		budget = time.Duration(cfg.FaultRounds)*cfg.FaultSlice*time.Duration(len(es)) + 2*time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	key := "bench:" + strings.ReplaceAll(s.name, " ", "-")
	// Warm up on healthy nodes: connections open, scripts cached.
	latency(ctx, key, es, plan{rounds: 1, slice: 20 * time.Millisecond})
	r := &LatencyResult{Name: s.name, Fault: s.fault, Route: s.route, Caps: s.caps}
	p := plan{rounds: cfg.Rounds, slice: cfg.Slice, allocs: s.allocs, caps: s.caps}
	if s.breakNode != nil {
		if err := s.breakNode(faulty(c)); err != nil {
			tb.Fatalf("bench: %s: %v", s.name, err)
		}
		r.Probe = probe(faulty(c))
		p.rounds, p.slice = cfg.FaultRounds, cfg.FaultSlice
	}
	r.Series = latency(ctx, key, es, p)
	return r
}

// probe reports what a new client sees of n: one PING, bounded by a second.
func probe(n *cluster.Node) string {
	rc := redis.NewClient(&redis.Options{Addr: n.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	err := rc.Ping(ctx).Err()
	if err != nil {
		return fmt.Sprintf("a new client's PING: %v (after %v)", err, time.Since(start).Round(time.Millisecond))
	}
	return fmt.Sprintf("a new client's PING (handshake included): ok in %v", time.Since(start).Round(time.Millisecond))
}

// Contention variants. This library's normal deployment is one Client per
// process, shared by its goroutines; the 8-Client variants stand for 8
// processes competing.
const (
	oursShared     = Ours + " (1 Client)"
	oursSharedFair = Ours + " WithFairness (1 Client)"
	oursManyFair   = Ours + " WithFairness (8 Clients)"
	oursMany       = Ours + " (8 Clients)"
	oursRueidis    = Ours + " over rueidis (1 Client)"
)

// faultedName names oursMany's variant under a fault scenario.
func faultedName(scenario string) string { return oursMany + ", " + scenario }

// runContention measures every contention variant, interleaved, and returns
// the names of the healthy ones and of the faulted ones (each breaks the
// faulty node for its own slices only), with their figures.
func runContention(tb testing.TB, c *cluster.Cluster, cfg Config) (names, faulted []string, out map[string]*contended) {
	tb.Helper()
	healthy(tb, c)
	defer healthy(tb, c)
	f := newFleet(c, viaProxy)
	defer closeFleet(tb, f)
	newOurs := func(opts ...redlock.LockOption) locker {
		l, err := f.ours(opts...)
		if err != nil {
			tb.Fatalf("bench: %v", err)
		}
		return l
	}
	shared := func(l locker) []locker {
		out := make([]locker, cfg.Workers)
		for i := range out {
			out[i] = l
		}
		return out
	}
	each := func(opts ...redlock.LockOption) []locker {
		out := make([]locker, cfg.Workers)
		for i := range out {
			out[i] = newOurs(opts...)
		}
		return out
	}
	rueidisOurs, err := f.oursRueidis()
	if err != nil {
		tb.Fatalf("bench: %v", err)
	}
	node := faulty(c)
	es := []entrant{
		{name: oursShared, lockers: shared(newOurs())},
		{name: oursRueidis, lockers: shared(rueidisOurs)},
		{name: oursSharedFair, lockers: shared(newOurs(redlock.WithFairness()))},
		{name: oursMany, lockers: each()},
		{name: oursManyFair, lockers: each(redlock.WithFairness())},
		{name: Redsync, lockers: shared(f.redsync())},
		{name: faultedName(blackholedName), lockers: each(),
			fault: func() error { return blackhole(node) }, heal: node.Heal},
		{name: faultedName(slowName(cfg.Slow)), lockers: each(),
			fault: func() error { return node.Slow(cfg.Slow) }, heal: node.Heal},
	}
	for _, e := range es {
		if e.fault == nil {
			names = append(names, e.name)
		} else {
			faulted = append(faulted, e.name)
		}
	}
	// The warm-up: the clients dial their connections and, for ours, open
	// their listeners before the measurement. Without it the first
	// slice's first waits (every worker starting at once on fresh clients:
	// 70-100 ms here) are 8 of the 1% of waits that set a variant's p99.
	p := plan{rounds: cfg.ContentionRounds, slice: cfg.ContentionSlice, warmUp: 300 * time.Millisecond}
	out, err = contention(context.Background(), "bench:contended", es, p, cfg.Hold, cfg.Drain)
	if err != nil {
		tb.Fatalf("bench: contention: %v", err)
	}
	return names, faulted, out
}

func runThroughput(tb testing.TB, c *cluster.Cluster, cfg Config) map[string]*rate {
	tb.Helper()
	healthy(tb, c)
	f := newFleet(c, viaProxy)
	defer closeFleet(tb, f)
	es := standard(tb, f)
	ctx := context.Background()
	// Warm up at full concurrency, so that the pools hold the connections
	// the measurement needs instead of dialing them under its clock.
	throughput(ctx, "bench:distinct", es, plan{rounds: 1, slice: cfg.ThroughputSlice / 2}, cfg.Goroutines)
	return throughput(ctx, "bench:distinct", es, plan{rounds: cfg.ThroughputRounds, slice: cfg.ThroughputSlice}, cfg.Goroutines)
}

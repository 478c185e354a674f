package sim

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/cryptotest"
	"time"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/internal/random"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
	"github.com/redlockgo/redlock/redlocktest"
)

// Setting is what a run's Clients are configured with beyond what the seed
// draws.
type Setting int

const (
	// Safe is the library's defaults (and per-Client node timeouts).
	Safe Setting = iota
	// NoQuarantine turns the restart quarantine off (WithQuarantine(0))
	// over nodes that never persist, so that every restart loses the
	// locks it held: known unsafe.
	NoQuarantine
	// FastClock is Safe with node 0's clock four times as fast in every
	// run (newClocks): beyond the drift the library allows for, so keys
	// there end long before their holders' Until. Known unsafe.
	FastClock
)

// Report is what one run found.
type Report struct {
	Seed       uint64
	Ops        int // calls made by the Clients
	Faults     int
	Violations []string
	Digest     string   // of the whole history
	Faulted    []string // the faults, one a line
	History    []string // every event, one a line
	Shown      []string // the shortest history that shows the first violation: its key's events
	Params     string   // the run's drawn parameters
	Holds      string   // how many holds of each kind the run made
	// Trace is the history with every message's fate between its lines
	// (network.trace), when tracing is on.
	Trace []string
}

// tracing turns the message trace on (Report.Trace): a replay's aid, slow.
var tracing bool

// maxTimeout is the longest node timeout a Client draws; maxTTL the
// longest TTL a worker asks for (worker.ttl), and quarantine the restart
// quarantine of the safe setting: maxTTL and its drift allowance, rounded
// up.
const (
	maxTimeout = 250 * time.Millisecond
	maxTTL     = 4*maxTimeout + 100*time.Millisecond + 2*time.Second
	quarantine = maxTTL + time.Second
)

// span is how long the workers of a run keep making calls, on the virtual
// clock: about 20 calls a run, and 2,000 runs in under three minutes on two
// cores.
const span = 5 * time.Second

// runner is one run.
type runner struct {
	t       *testing.T
	seed    uint64
	setting Setting
	nw      *network
	h       *history
	// locks are the keys of exclusive locks, readers and multi-locks;
	// permits the keys of semaphores, each with its limit; elections the
	// elections' names.
	locks     []string
	permits   []string
	limits    map[string]int
	elections []string
	weights   []int         // of each workload (workloads), drawn per run
	fencing   bool          // every node persists: fences are promised (docs/fencing.md)
	clients   int           // the workers, each with its Client
	span      time.Duration // how long the workers keep making calls
	params    string
	watchers  sync.WaitGroup // worker.watch's goroutines
	working   sync.WaitGroup // the workers still making calls (live.go)
}

// Run runs seed under setting. It must be called inside a synctest bubble
// (synctest.Test), with the bubble's t: every Client, node and message of
// the run lives in the bubble and is gone when Run returns.
func Run(t *testing.T, seed uint64, setting Setting) Report {
	defer random.Seed(seed)()
	cryptotest.SetGlobalRandom(t, seed) // tokens: not in the digest, but the same run gets the same ones
	rng := rand.New(rand.NewPCG(seed, 1))
	r := newRunner(t, seed, setting, rng)
	var trace []event
	var traceMu sync.Mutex
	if tracing {
		r.nw.keys = r.traced()
		r.nw.trace = func(at time.Duration, line string) {
			traceMu.Lock()
			defer traceMu.Unlock()
			trace = append(trace, event{at: at, client: -1, seq: len(trace), what: line})
		}
		r.h.trace = r.nw.trace
	}
	var wg sync.WaitGroup
	wg.Go(func() { r.crashes() })
	if o := r.newOperator(); o != nil {
		r.params += fmt.Sprintf(" declare-fresh=%v/%d", o.from, o.tries)
		wg.Go(o.run)
	}
	r.working.Add(r.clients)
	for _, w := range r.workers(rng) {
		wg.Go(w.run)
	}
	wg.Wait()
	r.watchers.Wait()
	r.nw.wg.Wait()
	return r.report(trace)
}

// newRunner draws a run's nodes, network, faults, keys and workload mix.
func newRunner(t *testing.T, seed uint64, setting Setting, rng *rand.Rand) *runner {
	n := []int{3, 5}[rng.IntN(2)]
	clients := 2 + rng.IntN(3)
	r := &runner{t: t, seed: seed, setting: setting, clients: clients, span: span, limits: map[string]int{}}
	for k := range 1 + rng.IntN(3) {
		r.locks = append(r.locks, fmt.Sprintf("k%d", k))
	}
	r.permits = []string{"p0"}
	r.limits["p0"] = 1 + rng.IntN(3)
	r.elections = []string{"e0"}
	r.weights = drawWeights(rng)
	kit := redlocktest.New(t, n)
	nw := &network{start: time.Now(), loss: rng.Float64() * 0.05, spike: rng.Float64() * 0.05}
	nw.plan = newPlan(rng, n, clients, 8, r.span)
	nw.plan.clocks = newClocks(seed, n, r.span, setting)
	for j, c := range nw.plan.clocks {
		if c.drift != 0 || len(c.jumps) > 0 {
			kit.SetClock(j, func(now time.Time) time.Time { return nw.start.Add(c.read(now.Sub(nw.start))) })
		}
	}
	r.fencing = true
	untold := untoldNodes(seed, n)
	for j, p := range kit.Pools() {
		// The unsafe setting's nodes never persist: each restart loses
		// the locks its quarantine is off for.
		persist := rng.IntN(2) == 0 && setting != NoQuarantine
		nd := &simNode{index: j, addr: p.Addr(), server: p, persist: persist, untold: untold[j], fresh: map[int]bool{0: true}}
		r.fencing = r.fencing && nd.persist
		// The deployment declared every node's first run fresh (pool.FreshStartKey).
		if _, err := p.(pool.Commander).Do(context.Background(), "SET", keyspace.FreshStart, runID(j, 0)); err != nil {
			t.Fatalf("sim: declaring node %d fresh: %v", j, err)
		}
		nw.nodes = append(nw.nodes, nd)
	}
	r.nw = nw
	r.h = &history{start: nw.start, seqs: map[int]int{}}
	r.params = fmt.Sprintf("nodes=%d clients=%d locks=%d permits=%d loss=%.3f spike=%.3f persist=%v mix=%s",
		n, clients, len(r.locks), r.limits["p0"], nw.loss, nw.spike, persisting(nw.nodes), mix(r.weights))
	if slices.Contains(untold, true) {
		r.params += " untold=" + yesNo(untold)
	}
	if rates := drifts(nw.plan.clocks); rates != "" {
		r.params += " clocks=" + rates
	}
	return r
}

// untoldNodes draws which nodes' Pools tell no identity: in one run in
// two, each node three times in four. The draws have a source of their
// own, so a run without such nodes is the one its seed gave before they
// were drawn.
func untoldNodes(seed uint64, n int) []bool {
	rng := rand.New(rand.NewPCG(seed, 2))
	out := make([]bool, n)
	if rng.IntN(2) == 0 {
		for j := range out {
			out[j] = rng.IntN(4) != 0
		}
	}
	return out
}

// traced is every key the trace shows the values of.
func (r *runner) traced() []string {
	keys := slices.Concat(r.locks, r.permits)
	for _, e := range r.elections {
		key, _ := keyspace.Election(e)
		keys = append(keys, key)
	}
	return keys
}

// workers draws the run's workers: the first starts with the run, each
// other one with it or, one time in three, at a drawn time in the first
// half of the run (a Client created mid-run); each has its own node
// timeout.
func (r *runner) workers(rng *rand.Rand) []*worker {
	var out []*worker
	for c := range r.clients {
		w := &worker{r: r, c: c, rng: rand.New(rand.NewPCG(r.seed, uint64(100+c))), timeout: r.timeout(rng)}
		if c > 0 && rng.IntN(3) == 0 {
			w.start = time.Duration(rng.Int64N(int64(r.span / 2)))
		} else {
			// Created here, one after another: a Client draws its
			// channel's name from the one seeded source of tokens, so
			// Clients created at one instant by several goroutines
			// would draw in the scheduler's order.
			w.client = r.client(c, c, w.timeout)
		}
		r.params += fmt.Sprintf(" c%d.timeout=%v", c, w.timeout)
		if w.start > 0 {
			r.params += fmt.Sprintf(" c%d.start=%v", c, w.start)
		}
		out = append(out, w)
	}
	return out
}

// timeout draws a Client's node timeout.
func (r *runner) timeout(rng *rand.Rand) time.Duration {
	return 20*time.Millisecond + time.Duration(rng.Int64N(int64(maxTimeout-20*time.Millisecond)))
}

// client creates a Client with node timeout timeout whose messages cross
// the links of Client id, faulted as worker c's (a Client a worker creates
// to resume a lock runs on the worker's machine).
func (r *runner) client(c, id int, timeout time.Duration) *redlock.Client {
	// The quarantine the documentation asks for: the longest TTL any
	// Client uses (worker.ttl, Extend included) plus its drift allowance,
	// rounded up; off in the unsafe setting.
	q := quarantine
	if r.setting == NoQuarantine {
		q = 0
	}
	links := make([]pool.Pool, len(r.nw.nodes))
	for j, nd := range r.nw.nodes {
		l := &link{nw: r.nw, client: c, node: nd, seed: r.seed<<20 + uint64(1000+id*64+j)}
		links[j] = l
		if nd.untold {
			links[j] = untold{Pool: l, Commander: l}
		}
	}
	client, err := redlock.New(links, redlock.WithNodeTimeout(timeout), redlock.WithQuarantine(q))
	if err != nil {
		r.t.Errorf("sim: redlock.New: %v", err)
	}
	return client
}

// report checks the run's history and reports it.
func (r *runner) report(trace []event) Report {
	rep := Report{Seed: r.seed, Ops: r.h.ops, Faults: len(r.nw.plan.faults) + r.nw.plan.jumps(), Params: r.params, Holds: r.h.counts()}
	events := r.h.sorted()
	rep.Digest = digest(events)
	vs := slices.Concat(r.h.flagged, check(r.h.holds, r.limits), r.leftovers())
	for _, v := range vs {
		rep.Violations = append(rep.Violations, v.what)
	}
	for _, f := range r.nw.plan.faults {
		rep.Faulted = append(rep.Faulted, f.String())
	}
	for j, c := range r.nw.plan.clocks {
		for _, jp := range c.jumps {
			rep.Faulted = append(rep.Faulted, fmt.Sprintf("clock-jump node %d by %v at %v", j, jp.by, jp.at))
		}
	}
	for _, e := range events {
		rep.History = append(rep.History, e.String())
	}
	if tracing {
		all := append(slices.Clone(events), trace...)
		slices.SortStableFunc(all, traceOrder)
		for _, e := range all {
			rep.Trace = append(rep.Trace, e.String())
		}
	}
	if len(vs) > 0 {
		for _, e := range of(events, vs[0].key) {
			rep.Shown = append(rep.Shown, e.String())
		}
	}
	return rep
}

// crashes wipes each node that does not persist at the start of each of
// its crashes: it restarts empty. (A node that persists keeps its data, and
// its keys expire meanwhile, as on Redis.)
func (r *runner) crashes() {
	faults := slices.Clone(r.nw.plan.faults)
	slices.SortStableFunc(faults, func(a, b fault) int { return int(a.from - b.from) })
	for _, f := range faults {
		if f.kind != nodeCrash || r.nw.nodes[f.node].persist {
			continue
		}
		r.nw.sleepUntil(f.from)
		cmd := r.nw.nodes[f.node].server.(pool.Commander)
		_, _ = cmd.Do(context.Background(), "FLUSHALL")
		_, _ = cmd.Do(context.Background(), "SCRIPT", "FLUSH")
	}
}

// leftovers reports the keys that outlive the run without a TTL, beyond
// the documented ones (lasting).
func (r *runner) leftovers() []violation {
	var out []violation
	for _, nd := range r.nw.nodes {
		cmd := nd.server.(pool.Commander)
		keys, _ := cmd.Do(context.Background(), "KEYS", "*")
		list, _ := keys.([]any)
		for _, k := range list {
			key, _ := k.(string)
			ttl, _ := cmd.Do(context.Background(), "PTTL", key)
			if ttl == int64(-1) && !lasting(key) {
				base, _, _ := strings.Cut(key, ":")
				out = append(out, violation{base, fmt.Sprintf("key %q on node %d has no TTL", key, nd.index)})
			}
		}
	}
	return out
}

// drifts is the clocks' rates, as percents fast, or "" when none drifts.
func drifts(clocks []nodeClock) string {
	var rates []string
	drift := false
	for _, c := range clocks {
		rates = append(rates, fmt.Sprintf("%+.3f%%", 100*c.drift))
		drift = drift || c.drift != 0
	}
	if !drift {
		return ""
	}
	return strings.Join(rates, ",")
}

func persisting(nodes []*simNode) string {
	var p []bool
	for _, nd := range nodes {
		p = append(p, nd.persist)
	}
	return yesNo(p)
}

func yesNo(bs []bool) string {
	s := ""
	for _, b := range bs {
		s += map[bool]string{true: "y", false: "n"}[b]
	}
	return s
}

// traceOrder orders a trace by time; at one instant the history's events
// first, in their order, then the trace's lines by their text, which the
// goroutines of an instant append in the scheduler's order.
func traceOrder(a, b event) int {
	if a.at != b.at {
		return cmp.Compare(a.at, b.at)
	}
	switch ta, tb := a.client < 0, b.client < 0; {
	case ta != tb && ta:
		return 1
	case ta != tb:
		return -1
	case ta:
		return strings.Compare(a.what, b.what)
	}
	return 0
}

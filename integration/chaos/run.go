package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/examples/fencedstore"
	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

// Config is one run. Duration is required; zero values of the other fields
// select the defaults documented on each.
type Config struct {
	// Duration is how long clients and nemesis run.
	Duration time.Duration
	// Unsafe plays the negative control (every node without persistence,
	// a majority restarted at once while a lock is held, a client that
	// writes after pausing past its validity) instead of the safe schedule.
	Unsafe bool
	// Fencing takes every lock WithFencing and writes through
	// examples/fencedstore. A safe run with fencing persists every node
	// (AOF always): fence counters need it, a delayed restart does not help.
	Fencing bool
	// Seed drives every random choice (keys, faults, nodes, durations);
	// timing still varies between runs. 0 picks one from the clock.
	Seed uint64
	// Clients is the number of clients, each with its own redlock.Client
	// and connections; default 5, at least 3 for an unsafe run.
	Clients int
	// PerClient is the number of workers sharing each Client (its own
	// goroutines): they queue in the Client and hand the lock over among
	// themselves. Default 2 for the safe run; the unsafe run uses 1.
	PerClient int
	// Keys is the number of lock keys, each guarding one counter; default 3.
	Keys int
	// HotClients is the number of further Clients with one worker each,
	// as that many processes would be, contending on HotKeys keys of their
	// own with a blocking Lock; default 8, negative none. Every hot Client
	// locks every hot key now and then, so each key's holders interleave
	// across Clients under the faults.
	HotClients int
	// HotKeys is the number of hot keys, each guarding one counter, apart
	// from Keys; default 2.
	HotKeys int
	// TTL of the ordinary locks; default 3s.
	TTL time.Duration
	// NodeTimeout of every client (redlock.WithNodeTimeout); default
	// 150ms, a few percent of the TTL, with room for a loaded machine.
	NodeTimeout time.Duration
	// MultiEvery makes about one iteration in MultiEvery of an ordinary
	// worker a multi-lock: two of its keys taken together with LockAll,
	// each counter updated under it; default 4, negative never. The hot team
	// takes none: a multi-lock does not queue, and would mostly time out
	// behind the hot keys' queues.
	MultiEvery int
	// RWClients is the number of further Clients with one worker each on
	// RWKeys read/write keys of their own: about one iteration in
	// WriteEvery a writer (Lock) that updates the key's counter, the others
	// readers (RLock) holding it 5-20ms. Defaults 4, 2 and 4; RWClients
	// negative: no read/write workload.
	RWClients, RWKeys, WriteEvery int
	// PermitClients is the number of further Clients with one worker each
	// taking permits (AcquirePermit) of one key with limit PermitLimit,
	// each held 5-20ms. Defaults 4 and 2; PermitClients negative: no permit
	// workload.
	PermitClients, PermitLimit int
	// ElectionClients is the number of further Clients with one worker
	// each campaigning on one election (election.go): each leads 20-300ms,
	// proclaiming once or twice, then resigns, or about one time in ten
	// is killed (its Client closed without Resign, and replaced); two
	// Observe streams on one more Client record the terms. Default 3;
	// negative: no election workload.
	ElectionClients int
	// LiveClockJumps adds to the safe schedule forward jumps of a running
	// node's clock by the TTL: beyond what the clients' clock check can
	// prevent (it sees a jump only at its next reading), so a run with them
	// may find violations. Off by default; for measuring how often.
	LiveClockJumps bool
	// LongEvery makes about one hold in LongEvery work for 1.5 TTLs, kept
	// alive by WithAutoExtend; default 400, negative never.
	LongEvery int
	// ClusterShards, when positive, makes the lock nodes three Redis
	// Clusters of that many masters each (cluster.StartRedisClusters), the
	// shard of the ordinary keys with a replica, and the nemesis one of
	// single shards (shards.go): masters killed and started again empty
	// after the TTL, or paused, and failover rounds of the ordinary keys'
	// shard on two clusters while the holder's claims are valid. Only runs
	// without fencing play on clusters (their shards persist nothing); the
	// unsafe run there plays failover rounds only, with the quarantine off.
	// Every workload plays there; the ordinary keys share the hash tag
	// {chaos} ("{chaos}:0", ...), since a multi-lock's keys must lie in one
	// slot of a cluster node; the other keys have none, and spread over the
	// shards.
	ClusterShards int
	// Logf receives the progress and the report; default tb.Logf.
	Logf func(format string, args ...any)
}

// Timing of the unsafe run's misbehaving clients.
const (
	pauserTTL   = time.Second            // the pauser's locks
	pauseEvery  = 3                      // about one of its writes in pauseEvery comes late
	pauseBeyond = 500 * time.Millisecond // by this much past Until()
)

func (c Config) withDefaults(tb testing.TB) (Config, error) {
	if c.Duration <= 0 {
		return c, fmt.Errorf("chaos: duration must be positive, got %v", c.Duration)
	}
	c.Clients = cmp.Or(c.Clients, 5)
	c.PerClient = cmp.Or(c.PerClient, 2)
	if c.Unsafe {
		c.PerClient = 1 // roles are per worker; keep each one's Client its own
	}
	c.Keys = cmp.Or(c.Keys, 3)
	c.HotClients = max(cmp.Or(c.HotClients, 8), 0)
	c.HotKeys = cmp.Or(c.HotKeys, 2)
	c.TTL = cmp.Or(c.TTL, 3*time.Second)
	c.NodeTimeout = cmp.Or(c.NodeTimeout, 150*time.Millisecond)
	c.LongEvery = cmp.Or(c.LongEvery, 400)
	c.MultiEvery = cmp.Or(c.MultiEvery, defaultMultiEvery)
	c.RWClients = max(cmp.Or(c.RWClients, defaultRWClients), 0)
	c.RWKeys = cmp.Or(c.RWKeys, defaultRWKeys)
	c.WriteEvery = cmp.Or(c.WriteEvery, defaultWriteEvery)
	c.PermitClients = max(cmp.Or(c.PermitClients, defaultPermitClients), 0)
	c.PermitLimit = cmp.Or(c.PermitLimit, defaultPermitLimit)
	c.ElectionClients = max(cmp.Or(c.ElectionClients, defaultElectionClients), 0)
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	if c.Logf == nil {
		c.Logf = tb.Logf
	}
	if c.ClusterShards > 0 && c.Fencing {
		return c, errors.New("chaos: on clusters, only runs without fencing play")
	}
	if c.Unsafe && c.Clients < 3 {
		return c, fmt.Errorf("chaos: an unsafe run needs at least 3 clients (victim, pauser, one honest), got %d", c.Clients)
	}
	if c.Keys < 1 {
		return c, fmt.Errorf("chaos: need at least one key, got %d", c.Keys)
	}
	if c.HotClients > 0 && c.HotKeys < 1 {
		return c, fmt.Errorf("chaos: hot clients need at least one hot key, got %d", c.HotKeys)
	}
	if c.RWClients > 0 && (c.RWKeys < 1 || c.WriteEvery < 1) {
		return c, fmt.Errorf("chaos: read/write clients need a key and WriteEvery of at least 1, got %d and %d", c.RWKeys, c.WriteEvery)
	}
	if c.PermitClients > 0 && (c.PermitLimit < 1 || c.PermitLimit > redlock.MaxPermits) {
		return c, fmt.Errorf("chaos: permit limit must be between 1 and %d, got %d", redlock.MaxPermits, c.PermitLimit)
	}
	return c, nil
}

// team is a group of workers: clients Clients, each shared by perClient
// workers, all playing workload on keys.
type team struct {
	clients, perClient int
	keys               []string
	workload           Workload
}

// teams lays the workers out: the ordinary team (Clients Clients of
// PerClient workers on Keys keys; the unsafe roles go to its first
// workers), then the hot team (HotClients Clients of one worker each on
// HotKeys keys), the read/write team, the permit team and the election
// team, each of one worker per Client, if any.
func (c Config) teams() []team {
	ts := []team{{clients: c.Clients, perClient: c.PerClient, keys: c.ordinaryKeys()}}
	if c.HotClients > 0 {
		ts = append(ts, team{clients: c.HotClients, perClient: 1, keys: keyNames("chaos:hot:", c.HotKeys)})
	}
	if c.RWClients > 0 {
		ts = append(ts, team{clients: c.RWClients, perClient: 1, keys: c.rwKeys(), workload: RW})
	}
	if c.PermitClients > 0 {
		ts = append(ts, team{clients: c.PermitClients, perClient: 1, keys: permitKeys, workload: Permits})
	}
	if c.ElectionClients > 0 {
		ts = append(ts, team{clients: c.ElectionClients, perClient: 1, keys: electionNames, workload: Election})
	}
	return ts
}

// crew builds the workers of c from base (what they share): every team's,
// each Client from newClient; the unsafe run's victim and pauser are the
// ordinary team's first workers, and the safe run's holder of the
// majority-amnesia rounds, when it has them, one more worker on a Client
// of its own; either holder has a prober, on another Client, which it
// runs itself. It also returns the keys that guard counters.
func (c Config) crew(newClient func() *redlock.Client, base worker) ([]*worker, []string) {
	var workers []*worker
	var keys []string
	add := func(client *redlock.Client, tm team, multiEvery int) *worker {
		w := base
		w.id, w.client, w.keys, w.workload = len(workers), client, tm.keys, tm.workload
		w.rng = rand.New(rand.NewPCG(c.Seed, uint64(w.id)+1))
		w.longEvery, w.multiEvery, w.writeEvery, w.limit = max(c.LongEvery, 0), multiEvery, c.WriteEvery, c.PermitLimit
		workers = append(workers, &w)
		return &w
	}
	for t, tm := range c.teams() {
		if tm.workload != Permits && tm.workload != Election { // their keys guard no counter
			keys = append(keys, tm.keys...)
		}
		multiEvery := 0
		if t == 0 { // the ordinary team
			multiEvery = max(c.MultiEvery, 0)
		}
		for range tm.clients {
			client := newClient()
			for range tm.perClient {
				w := add(client, tm, multiEvery)
				if tm.workload == Election {
					w.newClient = newClient // to replace a killed leader's
				}
			}
		}
	}
	var holder *worker
	switch {
	case c.Unsafe:
		holder = workers[0]
		workers[1].role = pauser
	case c.hasHolder():
		holder = add(newClient(), team{keys: c.ordinaryKeys()}, 0)
	}
	if holder != nil {
		own := c.ownClaims(c.victimClaims())
		holder.role, holder.victimClaims, holder.victimTTL = victim, append(c.sharedClaims(), own...), c.holderTTL()
		holder.prober, holder.probes = add(newClient(), team{keys: c.ordinaryKeys()}, 0), probeClaims(own)
		workers = workers[:len(workers)-1] // the holder runs it
	}
	return workers, keys
}

// ordinaryKeys are the ordinary team's keys, which its multi-locks take two
// at a time: on clusters they share a hash tag, so that each multi-lock's
// keys lie in one slot, as a cluster node requires.
func (c Config) ordinaryKeys() []string {
	if c.ClusterShards > 0 {
		return keyNames("{chaos}:", c.Keys)
	}
	return keyNames("chaos:", c.Keys)
}

func keyNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// persistence is the nodes' persistence: the safe run mixes two AOF-always
// nodes (0 and 1, killed and restarted at once) with three without
// persistence (2 to 4: restarted after the TTL, or at once under
// quarantine, alone or, in the majority-amnesia round, all three); the
// unsafe run has none at all. The safe runs' nodes have fake clocks, for
// the clock faults.
func (c Config) persistence() []cluster.Option {
	switch {
	case c.Unsafe:
		return []cluster.Option{cluster.WithPersistence(cluster.NoPersistence)}
	case c.Fencing:
		return []cluster.Option{cluster.WithPersistence(cluster.AOFAlways), cluster.WithFakeClocks()}
	}
	return []cluster.Option{cluster.WithPersistence(cluster.AOFAlways), cluster.WithFakeClocks(),
		cluster.WithNodePersistence(2, cluster.NoPersistence), cluster.WithNodePersistence(3, cluster.NoPersistence),
		cluster.WithNodePersistence(4, cluster.NoPersistence)}
}

// Run runs one chaos run on a fresh cluster of five nodes plus a separate
// node for the counters, both removed when tb ends, and checks its history.
// It fails tb if the cluster cannot start; it returns an error (with the
// result so far) when a node could not be brought back from a fault.
func Run(tb testing.TB, cfg Config) (Result, error) {
	tb.Helper()
	cfg, err := cfg.withDefaults(tb)
	if err != nil {
		return Result{}, err
	}
	cfg.Logf("chaos: cluster-shards=%d unsafe=%v fencing=%v live-clock-jumps=%v seed=%d duration=%v clients=%d workers-per-client=%d keys=%d "+
		"hot-clients=%d (one worker each) hot-keys=%d ttl=%v node-timeout=%v multi-every=%d "+
		"rw-clients=%d rw-keys=%d write-every=%d permit-clients=%d permit-limit=%d election-clients=%d",
		cfg.ClusterShards, cfg.Unsafe, cfg.Fencing, cfg.LiveClockJumps, cfg.Seed, cfg.Duration, cfg.Clients, cfg.PerClient, cfg.Keys,
		cfg.HotClients, cfg.HotKeys, cfg.TTL, cfg.NodeTimeout, cfg.MultiEvery,
		cfg.RWClients, cfg.RWKeys, cfg.WriteEvery, cfg.PermitClients, cfg.PermitLimit, cfg.ElectionClients)
	newClient, nodes := startNodes(tb, cfg)
	storage := cluster.Start(tb, cluster.WithNodes(1)).Node(0).Client() // never faulted
	var st store = plainStore{rdb: storage}
	if cfg.Fencing {
		st = fencedStore{s: fencedstore.New(storage)}
	}
	var (
		rec     recorder
		stats   stats
		faults  faultLog
		victims = make(chan amnesia)
		// nodeEvents counts what the clients reported of the nodes: every
		// quarantined run, and every clock fault (the nemesis's clock
		// faults; the nodes otherwise share the host's clock).
		nodeEvents nodeReports
	)
	newLockClient := func() *redlock.Client {
		return newClient(redlock.WithNodeTimeout(cfg.NodeTimeout), redlock.WithQuarantine(cfg.quarantine()),
			redlock.WithClockCheck(cfg.clockCheck()), redlock.WithObserver(&nodeEvents))
	}
	// The holder's claims after a quarantine may go on past the run
	// (claimsAfter); Run returns once they are done.
	after, stopAfter := context.WithTimeout(context.Background(), cfg.Duration+recoverGrace)
	defer stopAfter()
	workers, keys := cfg.crew(newLockClient, worker{ttl: cfg.TTL, leadTTL: cfg.electionTTL(), fencing: cfg.Fencing, store: st, rec: &rec, after: after, logf: cfg.Logf,
		stats: &stats, faults: &faults, victim: victims, hush: &hush{}, lastKilled: &atomic.Bool{}})
	amnesia, failover := &amnesiaLog{}, &amnesiaLog{}
	var n schedule
	if rc, ok := nodes.(*cluster.RedisClusters); ok {
		n = &shardNemesis{rc: rc, ttl: cfg.TTL, rng: rand.New(rand.NewPCG(cfg.Seed, 0)), faults: &faults, logf: cfg.Logf,
			shard: cfg.failoverShard(), rounds: holderRound{victim: victims, workloads: cfg.Workloads(), settle: cfg.quarantine(),
				log: failover, logf: cfg.Logf}}
	} else {
		n = &nemesis{c: nodes.(*cluster.Cluster), ttl: max(cfg.TTL, pauserTTL), rng: rand.New(rand.NewPCG(cfg.Seed, 0)),
			faults: &faults, logf: cfg.Logf, victim: victims, liveJumps: cfg.LiveClockJumps, settle: cfg.quarantine(),
			majority: cfg.playsMajorityAmnesia(), workloads: cfg.Workloads(), amnesia: amnesia}
	}

	ctx, cancel := context.WithTimeout(context.Background(), cfg.Duration)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { w.run(ctx) })
	}
	if cfg.ElectionClients > 0 {
		obs := newLockClient()
		for i := range electionStreams {
			wg.Go(func() { observe(ctx, obs, electionNames[0], i, &rec) })
		}
	}
	var nemErr error
	wg.Go(func() {
		if cfg.Unsafe {
			nemErr = n.runUnsafe(ctx)
		} else {
			nemErr = n.runSafe(ctx)
		}
		if nemErr != nil {
			cancel() // no verdict without the schedule: stop the clients
		}
	})
	wg.Wait()

	final, err := finalCounters(context.Background(), st, keys)
	if err != nil {
		return Result{}, err
	}
	hist := rec.history(final)
	// A failover forgets the terms on the shard's new masters as a restart does.
	hist.Amnesias = append(amnesia.killTimes(), failover.killTimes()...)
	slices.SortFunc(hist.Amnesias, time.Time.Compare)
	res := Result{Report: Check(hist), Config: cfg, Faults: faults.snapshot(), Amnesia: amnesia.report(start, hist.Holds),
		Failover: failover.report(start, hist.Holds), SatOut: nodeEvents.satOut(),
		Failed: stats.failed.Load(), Skipped: stats.skipped.Load(), ReadErrors: stats.readErrs.Load(),
		LongHolds: stats.long.Load(), LostLocks: stats.lost.Load(), MultiLocks: stats.multi.Load(), Elapsed: time.Since(start)}
	res.Untimed, err = auditTTLs(nodes)
	if err != nil {
		return res, err
	}
	if len(res.Untimed) > 0 {
		cfg.Logf("chaos: VIOLATION: %d keys without a TTL on the lock nodes, by shape: %s; first: %v",
			len(res.Untimed), redistest.ByShape(untimedKeys(res.Untimed)), res.Untimed[:min(len(res.Untimed), maxListed)])
	} else {
		cfg.Logf("chaos: audit: no key without a TTL on the lock nodes but fence counters and fresh-start declarations")
	}
	res.log(cfg.Logf)
	if top := stats.topReasons(5); len(top) > 0 {
		cfg.Logf("chaos: why acquisition calls failed, commonest first: %s", strings.Join(top, "; "))
	}
	cfg.Logf("chaos: the clients reported %d quarantined node runs and %d clock faults", nodeEvents.quarantined.Load(), nodeEvents.clock.Load())
	if first := nodeEvents.firstClock.Load(); first != nil {
		cfg.Logf("chaos: first clock fault reported: %v", *first)
	}
	if len(res.Overlaps) > 0 {
		first := slices.MinFunc(res.Overlaps, func(a, b Overlap) int { return a.B.Start.Compare(b.B.Start) })
		cfg.Logf("chaos: first overlap %v after the clients started", first.B.Start.Sub(start).Round(time.Millisecond))
	}
	if nemErr != nil {
		return res, fmt.Errorf("chaos: the nemesis could not repair a node: %w", nemErr)
	}
	return res, nil
}

// schedule is a nemesis: it plays faults until ctx ends, and returns an
// error only when it could not repair a node.
type schedule interface {
	runSafe(ctx context.Context) error
	runUnsafe(ctx context.Context) error
}

// startNodes starts the lock nodes of cfg: five standalone nodes behind
// proxies, or three Redis Clusters. It returns how to make a client of
// them, closed when tb ends, and the nodes (*cluster.Cluster or
// *cluster.RedisClusters).
func startNodes(tb testing.TB, cfg Config) (func(...redlock.Option) *redlock.Client, any) {
	if cfg.ClusterShards <= 0 {
		c := cluster.Start(tb, cfg.persistence()...)
		return func(opts ...redlock.Option) *redlock.Client { return c.NewClient(tb, opts...) }, c
	}
	rc := cluster.StartRedisClusters(tb, 3, cfg.ClusterShards, cluster.WithReplicas(cfg.failoverShard()))
	return func(opts ...redlock.Option) *redlock.Client {
		c, err := redlock.New(rc.Pools(), opts...)
		if err != nil {
			tb.Fatalf("chaos: %v", err)
		}
		tb.Cleanup(func() { _ = c.Close() })
		return c
	}, rc
}

// quarantine is the clients' restart quarantine (redlock.WithQuarantine):
// the longest TTL of the safe run's locks and leaderships (the holder's, holderTTL, when
// the run has majority-amnesia rounds) plus its drift allowance and a
// second, so that a node restarted empty counts again only once every key
// it forgot has expired, and the schedule can go on after it; off in the
// unsafe run, whose amnesia rounds show the hazard the quarantine
// prevents.
func (c Config) quarantine() time.Duration {
	if c.Unsafe {
		return 0
	}
	longest := c.TTL
	if c.ElectionClients > 0 {
		longest = max(longest, c.electionTTL())
	}
	if c.hasHolder() {
		longest = max(longest, c.holderTTL())
	}
	return longest + longest/100 + time.Second
}

// clockCheck is how often each client reads every node's clock
// (redlock.WithClockCheck): every 250ms in the safe run, never in the
// unsafe one, whose clients run without the protections.
func (c Config) clockCheck() time.Duration {
	if c.Unsafe {
		return 0
	}
	return 250 * time.Millisecond
}

// nodeReports counts the clients' events about nodes.
type nodeReports struct {
	quarantined, clock atomic.Int64
	firstClock         atomic.Pointer[string] // the first clock fault's message

	mu      sync.Mutex
	returns []nodeReturn // NodeReturned events, in arrival order
}

// nodeReturn is one client's report that a restarted node counts again.
type nodeReturn struct {
	addr string
	at   time.Time     // when the client reported it
	age  time.Duration // the node's run's age then
}

// Observe implements redlock.Observer.
func (n *nodeReports) Observe(_ context.Context, e redlock.Event) {
	switch e.Kind {
	case redlock.NodeQuarantined:
		n.quarantined.Add(1)
	case redlock.NodeClockFault:
		n.clock.Add(1)
		msg := fmt.Sprint(e.Err)
		n.firstClock.CompareAndSwap(nil, &msg)
	case redlock.NodeReturned:
		n.mu.Lock()
		n.returns = append(n.returns, nodeReturn{addr: e.Addr, at: time.Now(), age: e.Duration})
		n.mu.Unlock()
	}
}

// satOut returns how long each restarted run sat out before it counted
// again by its horizon: the youngest age at which any client reported it.
// Reports of one run are told apart from the next run's by their start
// (at less age), within a second of each other.
func (n *nodeReports) satOut() []time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	type run struct {
		addr  string
		start time.Time
	}
	first := map[run]time.Duration{}
	var runs []run
	for _, r := range n.returns {
		start := r.at.Add(-r.age)
		i := slices.IndexFunc(runs, func(x run) bool {
			return x.addr == r.addr && x.start.Sub(start).Abs() < time.Second
		})
		if i < 0 {
			runs = append(runs, run{r.addr, start})
			first[runs[len(runs)-1]] = r.age
			continue
		}
		first[runs[i]] = min(first[runs[i]], r.age)
	}
	out := make([]time.Duration, 0, len(runs))
	for _, x := range runs {
		out = append(out, first[x])
	}
	return out
}

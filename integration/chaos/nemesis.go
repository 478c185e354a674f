package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redlockgo/redlock/integration/cluster"
)

// Fault kinds, as counted in Result.Faults.
const (
	// Safe schedule: each allowed by the model, at most two nodes down.
	killAOF     = "kill+restart at once (aof-always)"
	killDelayed = "kill+restart after TTL" // counted with the node's persistence
	// killAmnesia restarts a node without persistence at once: it comes
	// back empty, and only the clients' restart quarantine keeps it out of
	// majorities until every key it forgot has expired.
	killAmnesia = "kill+restart at once (no persistence, quarantined)"
	// majorityAmnesia kills three of the five nodes, none persisting, and
	// starts them again at once while a holder keeps a claim of every
	// workload (amnesia.go): they come back empty, and only the clients'
	// quarantine keeps anyone from taking what the holder still holds.
	// Counted once per node; the rounds are counted in Result.Amnesia.
	majorityAmnesia = "kill+restart of a majority at once while holds are valid (no persistence, quarantined)"
	// clockFast runs a node's clock at fastRate, then steps it back to the
	// real clock (a backward step only keeps keys longer). Outside the
	// model's drift bound: the clients' clock check must notice it before
	// any key set under it expires early (a 3s key lives 1.5s; the check
	// reads every 250ms), and keeps the node out until the quarantine ends.
	clockFast = "fast clock (x2)"
	// clockJump restarts a node without persistence at once with its clock
	// jumpAhead ahead, and later puts it back on the real clock with
	// another such restart. The jumps happen while the node is down and
	// empty, so they shorten no key: the quarantine and the clock check
	// keep it out of majorities meanwhile.
	clockJump = "kill+restart at once with the clock 1m ahead, and back (no persistence, quarantined)"
	// clockJumpLive jumps a running node's clock forward by the TTL, then
	// steps it back: every key on the node expires at once. Only with
	// Config.LiveClockJumps: the clock check notices it at its next reading,
	// and a Client that takes the node before then may share a lock.
	clockJumpLive = "clock jump forward by the TTL (running node), and back"
	pauseNode     = "pause"
	partition     = "partition"
	blackhole     = "blackhole (replies lost)"
	latency       = "latency spike"
	// Unsafe schedule: each outside the model.
	restartEmpty = "restart without persistence or delay (majority)"
	clientPause  = "client paused past validity"
)

// faultLog counts injected faults by kind.
type faultLog struct {
	mu     sync.Mutex
	counts map[string]int
}

func (f *faultLog) add(kind string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counts == nil {
		f.counts = make(map[string]int)
	}
	f.counts[kind]++
}

func (f *faultLog) snapshot() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.counts)
}

// nemesis injects faults into the lock nodes while the workers run.
type nemesis struct {
	c      *cluster.Cluster
	ttl    time.Duration
	rng    *rand.Rand
	faults *faultLog
	logf   func(format string, args ...any)
	victim chan<- amnesia // to the holder of the amnesia rounds
	// majority adds the majority-amnesia round to the safe schedule, as
	// the first round of the run and once in every cycle; workloads are
	// those the holder must keep valid through it for the round to count.
	majority  bool
	workloads []Workload
	amnesia   *amnesiaLog
	// restartHook, when set, replaces killing and starting the nodes of
	// an amnesia round (tests).
	restartHook func(nodes []int) error
	// liveJumps adds clockJumpLive rounds to the safe schedule.
	liveJumps bool
	// settle is the clients' quarantine (Config.quarantine): a node that
	// came back empty, or whose clock they caught running fast, stays out of
	// their majorities that long after it recovered. The safe schedule
	// counts it as down meanwhile (see awaitRoom).
	settle time.Duration

	mu       sync.Mutex
	outUntil map[int]time.Time // node -> end of its quarantine after a fault
	// quietUntil is when the next round may start after a majority's
	// quarantine (quietAfter).
	quietUntil time.Time
}

// fault is one fault on one node for a while.
type fault struct {
	kind  string
	node  int
	hold  time.Duration
	delay time.Duration // latency spikes: the added latency each way
}

// Timing of the safe schedule.
const (
	minHold = 300 * time.Millisecond
	maxHold = 2500 * time.Millisecond
	// restartMargin is added to the TTL before a node without persistence
	// comes back: every key it held has expired by then.
	restartMargin = time.Second
	maxQuiet      = 800 * time.Millisecond
	fastRate      = 2
	jumpAhead     = time.Minute
)

// single is one fault of kind on a node that suits it: a kill-and-restart
// with AOF on a node that has it, a delayed restart on one that has not.
func (n *nemesis) single(kind string) []fault {
	nodes := n.rng.Perm(n.c.Len())
	for _, i := range nodes {
		if k := n.downKind(kind, i); k == kind {
			return []fault{n.newFault(k, i)}
		}
	}
	return []fault{n.newFault(n.downKind(kind, nodes[0]), nodes[0])}
}

// spread puts random down faults on `down` distinct nodes and latency on
// `slow` others.
func (n *nemesis) spread(down, slow int) []fault {
	kinds := []string{killAOF, killAmnesia, pauseNode, partition, blackhole}
	var out []fault
	for j, i := range n.rng.Perm(n.c.Len())[:down+slow] {
		kind := latency
		if j < down {
			kind = n.downKind(kinds[n.rng.IntN(len(kinds))], i)
		}
		out = append(out, n.newFault(kind, i))
	}
	return out
}

// downKind adapts a kill to node i's persistence: a node without it stays
// down past the TTL, or comes back at once under quarantine (killAmnesia).
func (n *nemesis) downKind(kind string, i int) string {
	if kind != killAOF && kind != killDelayed && kind != killAmnesia && kind != clockJump {
		return kind
	}
	if (kind == killAmnesia || kind == clockJump) && n.c.Node(i).Persistence() != cluster.AOFAlways {
		return kind
	}
	if n.c.Node(i).Persistence() == cluster.AOFAlways {
		if kind == killDelayed && !n.anyVolatile() {
			return killDelayed // every node persists (fencing runs): a long outage
		}
		return killAOF
	}
	return killDelayed
}

func (n *nemesis) anyVolatile() bool {
	for _, nd := range n.c.Nodes() {
		if nd.Persistence() != cluster.AOFAlways {
			return true
		}
	}
	return false
}

func (n *nemesis) newFault(kind string, i int) fault {
	f := fault{kind: kind, node: i, hold: minHold + durN(n.rng, maxHold-minHold)}
	if kind == killDelayed {
		f.hold = n.ttl + restartMargin + durN(n.rng, time.Second)
	}
	if kind == latency {
		f.delay = 20*time.Millisecond + durN(n.rng, 280*time.Millisecond)
	}
	return f
}

// play runs faults together, each started after a small random stagger,
// and returns once every node has recovered.
func (n *nemesis) play(faults []fault) error {
	var desc []string
	for _, f := range faults {
		d := fmt.Sprintf("node %d: %s for %v", f.node, f.kind, f.hold.Round(time.Millisecond))
		if f.delay > 0 {
			d += fmt.Sprintf(" (+%v each way)", f.delay.Round(time.Millisecond))
		}
		desc = append(desc, d)
	}
	n.logf("nemesis: %s", strings.Join(desc, "; "))
	errs := make([]error, len(faults))
	staggers := make([]time.Duration, len(faults))
	for i := range staggers {
		staggers[i] = durN(n.rng, 300*time.Millisecond)
	}
	var wg sync.WaitGroup
	for i, f := range faults {
		wg.Go(func() {
			time.Sleep(staggers[i])
			errs[i] = n.apply(f)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// apply injects f, waits for its hold, and recovers the node. Injection
// errors are logged (the node may be half-faulted: recovery still runs);
// an error is returned only if recovery fails.
func (n *nemesis) apply(f fault) error {
	ctx := context.Background()
	nd := n.c.Node(f.node)
	var inject func() error
	undo := nd.Heal
	switch f.kind {
	case killAOF, killDelayed, killAmnesia:
		inject, undo = func() error { return nd.Kill(ctx) }, func() error { return nd.Start(ctx) }
	case clockFast:
		inject, undo = func() error { return nd.SetClock(0, fastRate) }, func() error { return nd.SetClock(0, 1) }
	case clockJumpLive:
		inject, undo = func() error { return nd.SetClock(n.ttl, 1) }, func() error { return nd.SetClock(0, 1) }
	case clockJump:
		inject = func() error { return restartWithClock(ctx, nd, jumpAhead) }
		undo = func() error { return restartWithClock(ctx, nd, 0) }
	case pauseNode:
		inject, undo = func() error { return nd.Pause(ctx) }, func() error { return nd.Unpause(ctx) }
	case partition:
		inject = nd.Partition
	case blackhole:
		inject = func() error { return nd.Blackhole(cluster.Downstream) }
	case latency:
		inject = func() error { return nd.Delay(cluster.Both, f.delay, f.delay/4) }
	default:
		return fmt.Errorf("chaos: unknown fault %q", f.kind)
	}
	if err := inject(); err != nil {
		n.logf("nemesis: inject %s on node %d: %v", f.kind, f.node, err)
	} else if f.kind == killDelayed {
		n.faults.add(fmt.Sprintf("%s (%v)", f.kind, nd.Persistence()))
	} else {
		n.faults.add(f.kind)
	}
	time.Sleep(f.hold) // even when the run ends: a delayed restart stays delayed
	err := retry(undo)
	if n.quarantines(f) {
		n.markOut([]int{f.node}, time.Now())
	}
	return err
}

// restartWithClock kills nd, sets its clock offset ahead of the real one,
// and starts it again: the node comes back empty (it does not persist) with
// its new clock.
func restartWithClock(ctx context.Context, nd *cluster.Node, offset time.Duration) error {
	if err := nd.Kill(ctx); err != nil {
		return err
	}
	if err := nd.SetClock(offset, 1); err != nil {
		return errors.Join(err, nd.Start(ctx))
	}
	return nd.Start(ctx)
}

// each runs op on the nodes in parallel.
func (n *nemesis) each(nodes []int, op func(*cluster.Node) error) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for j, i := range nodes {
		wg.Go(func() { errs[j] = op(n.c.Node(i)) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// retry runs a recovery up to three times: a container start on a loaded
// machine may time out once.
func retry(op func() error) error {
	var err error
	for attempt := range 3 {
		if err = op(); err == nil {
			return nil
		}
		time.Sleep(time.Duration(attempt+1) * time.Second)
	}
	return err
}

// sleep waits for d or the end of ctx.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// kinds returns the fault kinds seen, sorted, for logs.
func kinds(m map[string]int) []string { return slices.Sorted(maps.Keys(m)) }

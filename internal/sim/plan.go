package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/redlockgo/redlock/redlock"
)

// faultKind is one kind of fault the plan injects.
type faultKind int

const (
	nodePause   faultKind = iota // the node answers nothing; what arrives runs at the end, in order
	nodeCrash                    // the node refuses every message; it restarts at the end, empty unless it persists
	partition                    // messages between one Client and some nodes are lost, both ways
	clientPause                  // a GC stop: the Client sends and receives nothing until the end
)

func (k faultKind) String() string {
	return [...]string{"node-pause", "node-crash", "partition", "client-pause"}[k]
}

// fault is one fault of the plan, over [from, to) on the virtual clock
// (durations since the run's start).
type fault struct {
	kind     faultKind
	node     int    // nodePause, nodeCrash
	client   int    // partition, clientPause
	nodes    uint64 // partition: the nodes cut off from client, as a bit set
	from, to time.Duration
}

func (f fault) String() string {
	switch f.kind {
	case partition:
		return fmt.Sprintf("%v client %d from nodes %b [%v, %v)", f.kind, f.client, f.nodes, f.from, f.to)
	case clientPause:
		return fmt.Sprintf("%v client %d [%v, %v)", f.kind, f.client, f.from, f.to)
	}
	return fmt.Sprintf("%v node %d [%v, %v)", f.kind, f.node, f.from, f.to)
}

// plan is every fault of a run, drawn from the seed before the run starts,
// so the network can answer "is this link cut at t" as a pure function of
// virtual time: no goroutine decides a fault, and none races another to it.
type plan struct {
	faults []fault
	clocks []nodeClock // one per node
}

// newPlan draws up to maxFaults faults within [0, span) for a run of n nodes
// and c Clients.
func newPlan(rng *rand.Rand, n, c, maxFaults int, span time.Duration) plan {
	var p plan
	for range rng.IntN(maxFaults + 1) {
		f := fault{kind: drawKind(rng)}
		f.from = time.Duration(rng.Int64N(int64(span)))
		// How long it lasts: a restart takes milliseconds to a second, a
		// pause (a stalled disk, SIGSTOP, GC) or a partition up to seconds.
		last := map[faultKind]time.Duration{nodePause: 1500 * time.Millisecond, nodeCrash: 800 * time.Millisecond,
			partition: 2 * time.Second, clientPause: time.Second}[f.kind]
		f.to = f.from + time.Duration(rng.Int64N(int64(last))) + time.Millisecond
		switch f.kind {
		case nodePause, nodeCrash:
			f.node = rng.IntN(n)
		case partition:
			f.client = rng.IntN(c)
			f.nodes = rng.Uint64N(1<<n-1) + 1
		case clientPause:
			f.client = rng.IntN(c)
		}
		p.faults = append(p.faults, f)
	}
	return p
}

// kindWeights is how often each kind of fault is drawn, in parts: a
// crash twice as often as each other kind, since a restart that loses
// data while its locks are still valid is what the restart quarantine is
// for (and the negative control's only way to a violation).
var kindWeights = [...]int{nodePause: 1, nodeCrash: 2, partition: 1, clientPause: 1}

func drawKind(rng *rand.Rand) faultKind {
	sum := 0
	for _, w := range kindWeights {
		sum += w
	}
	x := rng.IntN(sum)
	for k, w := range kindWeights {
		if x < w {
			return faultKind(k)
		}
		x -= w
	}
	panic("unreachable")
}

// held returns when a message that would happen at t on a thing paused by
// faults of kind k (matching who) happens: t itself when no such fault
// covers t, else the end of the last covering fault plus a small offset
// that keeps the messages held by one fault in the order they came, and
// apart, as one connection delivers them.
func (p plan) held(k faultKind, who int, t time.Duration) time.Duration {
	for moved := true; moved; {
		moved = false
		for _, f := range p.faults {
			if f.kind != k || t < f.from || t >= f.to {
				continue
			}
			if (k == nodePause && f.node == who) || (k == clientPause && f.client == who) {
				t = f.to + (t-f.from)/1024 + 1
				moved = true
			}
		}
	}
	return t
}

// down reports whether node j is crashed at t.
func (p plan) down(j int, t time.Duration) bool {
	for _, f := range p.faults {
		if f.kind == nodeCrash && f.node == j && t >= f.from && t < f.to {
			return true
		}
	}
	return false
}

// cut reports whether the link between Client c and node j is cut at t.
func (p plan) cut(c, j int, t time.Duration) bool {
	for _, f := range p.faults {
		if f.kind == partition && f.client == c && f.nodes&(1<<j) != 0 && t >= f.from && t < f.to {
			return true
		}
	}
	return false
}

// run returns the run of node j at t (0 until its first restart, one more
// at each restart) and when that run started (0 for the first: the node
// was up before the simulation).
func (p plan) run(j int, t time.Duration) (run int, started time.Duration) {
	for _, f := range p.faults {
		if f.kind == nodeCrash && f.node == j && f.to <= t {
			run++
			started = max(started, f.to)
		}
	}
	return run, started
}

// nodeClock is a node's clock as a function of the virtual time: it runs
// at rate 1+drift and steps ahead at each jump. The zero value is the
// shared clock.
type nodeClock struct {
	drift float64
	jumps []jump // in time order
}

// jump is a node clock's step ahead by by at at.
type jump struct{ at, by time.Duration }

// read is the clock's reading at t, both since the run's start.
func (c nodeClock) read(t time.Duration) time.Duration {
	n := t + time.Duration(float64(t)*c.drift)
	for _, j := range c.jumps {
		if j.at <= t {
			n += j.by
		}
	}
	return n
}

// driftFactor is the Clients' drift factor (the default): over any span,
// a node's clock may advance at most the span times 1+driftFactor, plus
// 2ms (the clock check's bound, docs/safety.md).
const driftFactor = redlock.DefaultDriftFactor

// jumpMax is how far a node's clock may run ahead of its rate at once: of
// the 2ms, 1ms is left to jumps and 1ms to the TTL, which goes to the
// nodes in whole milliseconds and may lose up to 1ms there.
const jumpMax = time.Millisecond

// newClocks draws the n nodes' clocks within the contract. In one run in
// two, each node's clock runs from 1% slow to 0.5% fast and jumps ahead up
// to twice, each jump at most what a token bucket holds that holds
// jumpMax and fills at the rate the clock's drift leaves of driftFactor:
// over any span, the clock advances at most the span times 1+driftFactor,
// plus jumpMax. Under FastClock, node 0's clock runs four times as fast in
// every run: beyond the contract. The draws have a source of their own, so
// a run whose clocks do not drift is the one its seed gave before.
func newClocks(seed uint64, n int, span time.Duration, setting Setting) []nodeClock {
	rng := rand.New(rand.NewPCG(seed, 3))
	out := make([]nodeClock, n)
	if rng.IntN(2) == 0 && setting != FastClock {
		return out
	}
	for j := range out {
		c := &out[j]
		c.drift = driftFactor * (1.5*rng.Float64() - 1)
		var at []time.Duration
		for range rng.IntN(3) {
			at = append(at, time.Duration(rng.Int64N(int64(span))))
		}
		slices.Sort(at)
		tokens, last := float64(jumpMax), time.Duration(0)
		for _, t := range at {
			tokens = min(float64(jumpMax), tokens+float64(t-last)*(driftFactor-c.drift))
			by := time.Duration(rng.Float64() * tokens)
			tokens -= float64(by)
			last = t
			c.jumps = append(c.jumps, jump{at: t, by: by})
		}
	}
	if setting == FastClock {
		out[0].drift = 3
	}
	return out
}

// jumps counts the jumps of the plan's clocks, which the summary counts
// as faults.
func (p plan) jumps() int {
	k := 0
	for _, c := range p.clocks {
		k += len(c.jumps)
	}
	return k
}

// slowed is how long something that takes d on a node's clock may take
// on the shared one, on the slowest node.
func (p plan) slowed(d time.Duration) time.Duration {
	slowest := 0.0
	for _, c := range p.clocks {
		slowest = min(slowest, c.drift)
	}
	return time.Duration(float64(d) / (1 + slowest))
}

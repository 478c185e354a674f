package sim

import (
	"fmt"
	"math/rand/v2"
	"time"
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

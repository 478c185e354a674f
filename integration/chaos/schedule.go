package chaos

import (
	"context"
	"slices"
	"time"

	"github.com/redlockgo/redlock/integration/cluster"
)

// The safe schedule: which rounds a cycle plays, in what order, and when a
// round may start (awaitRoom). The faults themselves are in nemesis.go,
// the amnesia round in amnesia.go.

// round is one round of the safe schedule: its name (a fault kind, or a
// combination) and its faults, drawn when it is played.
type round struct {
	name   string
	faults func() []fault
}

// Names of the rounds that combine faults.
const (
	latencyRound      = "latency on 1-3 nodes"
	twoDown           = "two down"
	twoDownAndLatency = "two down + latency"
)

// rounds is one cycle of the safe schedule: every kind alone and in pairs,
// and the majority-amnesia round when the run has it.
func (n *nemesis) rounds() []round {
	rs := []round{
		{killAOF, func() []fault { return n.single(killAOF) }},
		{killDelayed, func() []fault { return n.single(killDelayed) }},
		{killAmnesia, func() []fault { return n.single(killAmnesia) }},
		{clockFast, func() []fault { return n.single(clockFast) }},
		{clockJump, func() []fault { return n.single(clockJump) }},
		{pauseNode, func() []fault { return n.single(pauseNode) }},
		{partition, func() []fault { return n.single(partition) }},
		{blackhole, func() []fault { return n.single(blackhole) }},
		{latencyRound, func() []fault { return n.spread(0, 1+n.rng.IntN(3)) }},
		{twoDown, func() []fault { return n.spread(2, 0) }},
		{twoDownAndLatency, func() []fault { return n.spread(2, 1) }},
	}
	if n.liveJumps {
		rs = append(rs, round{clockJumpLive, func() []fault { return n.single(clockJumpLive) }})
	}
	if n.majority {
		rs = append(rs, round{majorityAmnesia, n.majorityFaults})
	}
	return rs
}

// plan shuffles a cycle of rounds; the first cycle of a run begins with
// the majority-amnesia round, so that every run long enough for one round
// has one.
func (n *nemesis) plan(rs []round, first bool) []round {
	rs = slices.Clone(rs)
	n.rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
	if i := slices.IndexFunc(rs, func(r round) bool { return r.name == majorityAmnesia }); first && i > 0 {
		rs[0], rs[i] = rs[i], rs[0]
	}
	return rs
}

// runSafe plays rounds of faults the model allows until ctx ends. Each
// cycle of rounds covers every kind, alone and in pairs: at most two nodes
// down (killed, paused, partitioned or blackholed, or quarantined by the
// clients after one came back) at once, plus latency on others; and, once
// a cycle, a majority of the nodes restarted empty while holds are valid,
// which the clients' quarantine keeps out of every majority, and which no
// other fault joins or follows until recoverWindow after that quarantine
// ended. It returns an
// error only when a node could not be brought back.
func (n *nemesis) runSafe(ctx context.Context) error {
	rs := n.rounds()
	for cycle := 0; ctx.Err() == nil; cycle++ {
		for _, r := range n.plan(rs, cycle == 0) {
			if ctx.Err() != nil {
				return nil
			}
			faults := r.faults()
			if n.awaitRoom(ctx, faults); ctx.Err() != nil {
				return nil
			}
			var err error
			if r.name == majorityAmnesia {
				attempts := amnesiaAttempts
				if cycle == 0 {
					attempts = 0 // until it plays: every run has one
				}
				err = n.playMajority(ctx, nodesOf(faults), attempts)
			} else {
				err = n.play(faults)
			}
			if err != nil {
				return err
			}
			sleep(ctx, durN(n.rng, maxQuiet))
		}
	}
	return nil
}

func nodesOf(faults []fault) []int {
	out := make([]int, len(faults))
	for i, f := range faults {
		out[i] = f.node
	}
	return out
}

// maxDown is how many nodes the safe schedule keeps out of the clients'
// majorities at once, at most: two of five leave a majority up.
const maxDown = 2

// awaitRoom waits, until ctx ends, for the nodes that the clients still keep
// out after an earlier fault (quarantined) to leave room for the round's
// down faults: without it a round could take two nodes down while a third
// sat out its quarantine, and no lock could be taken meanwhile. After a
// majority's quarantine it first waits recoverWindow more (quietAfter).
func (n *nemesis) awaitRoom(ctx context.Context, faults []fault) {
	n.mu.Lock()
	quiet := n.quietUntil
	n.mu.Unlock()
	if d := time.Until(quiet); d > 0 {
		sleep(ctx, d)
	}
	down, hit := 0, map[int]bool{}
	for _, f := range faults {
		if f.kind != latency {
			down++
			hit[f.node] = true
		}
	}
	for ctx.Err() == nil {
		now := time.Now()
		var out []time.Time
		n.mu.Lock()
		for i, t := range n.outUntil {
			if t.After(now) && !hit[i] { // a fault on a node already out adds none
				out = append(out, t)
			}
		}
		n.mu.Unlock()
		if down+len(out) <= maxDown || len(out) == 0 {
			return
		}
		sleep(ctx, slices.MinFunc(out, time.Time.Compare).Sub(now))
	}
}

// quarantines reports whether the clients keep f's node out of their
// majorities for a while after it recovered: it came back without its
// data, or with a clock they saw running fast.
func (n *nemesis) quarantines(f fault) bool {
	switch f.kind {
	case killAmnesia, clockJump, clockFast, clockJumpLive, majorityAmnesia:
		return true
	case killDelayed:
		return n.c.Node(f.node).Persistence() != cluster.AOFAlways
	}
	return false
}

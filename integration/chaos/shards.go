package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redlockgo/redlock/integration/cluster"
)

// Faults of the shard nemesis, on one master of one cluster each.
const (
	killShard  = "shard master kill+restart after TTL (no persistence)"
	pauseShard = "shard master pause"
	// failoverShard: the replica of the ordinary keys' shard, cut off
	// before the holder took its claims, takes over (CLUSTER FAILOVER
	// TAKEOVER, its master paused meanwhile) on two of the three clusters
	// while the claims are valid: the new masters lack them, and only the
	// clients' failover quarantine keeps anyone from taking what the
	// holder holds. Counted once per cluster; the rounds in Result.Failover.
	failoverShard = "shard failover to a replica without the locks, on a majority, while holds are valid (quarantined)"
	// failoverUnsafe is the same round in the unsafe run, quarantine off.
	failoverUnsafe = "shard failover to a replica without the locks, on a majority, while holds are valid (quarantine off)"
)

// shardNemesis injects faults into single shards of Redis Clusters while the
// workers run: a killed master stays down past the TTL and comes back
// empty (every key it held has expired by then, as for a standalone node
// restarted late), a paused one comes back with everything. A round breaks
// one or two shards, on different clusters, so a key's majority may be
// lost (liveness) but never a key forgotten (safety), but for the failover
// round, the first of the run and one in failoverEvery after it.
type shardNemesis struct {
	rc     *cluster.RedisClusters
	ttl    time.Duration
	rng    *rand.Rand
	faults *faultLog
	logf   func(format string, args ...any)
	// shard is the one with a replica, which the failover round promotes;
	// rounds asks the holder, and counts the failover rounds.
	shard  int
	rounds holderRound
	// room keeps the rounds from taking a shard out on a second cluster
	// while it is out on one, counting the clients' quarantine after a
	// shard came back without its data.
	room shardRoom
}

// failoverEvery makes about one round in failoverEvery of the safe
// schedule, after the first, a failover round.
const failoverEvery = 6

// shardFault is one fault on one shard master.
type shardFault struct {
	kind        string
	node, shard int
	hold        time.Duration
}

// runSafe plays rounds of one or two shard faults until ctx ends, each on
// a shard that no other cluster has out (room). It returns an error only
// when a shard could not be brought back.
func (n *shardNemesis) runSafe(ctx context.Context) error {
	for first := true; ctx.Err() == nil; first = false {
		// A failover round after the first plays only once its shard has
		// been clear for recoverWindow (see failover); until then the
		// other rounds go on.
		due := n.rng.IntN(failoverEvery) == 0 && n.room.clearFor(n.shard, recoverWindow, time.Now())
		if first || due {
			if err := n.failover(ctx, failoverShard, first); err != nil {
				return err
			}
			sleep(ctx, durN(n.rng, maxQuiet))
			continue
		}
		faults := n.draw()
		if len(faults) == 0 {
			sleep(ctx, 100*time.Millisecond) // no room: a quarantine lasts
			continue
		}
		if err := n.play(faults); err != nil {
			return err
		}
		sleep(ctx, durN(n.rng, maxQuiet))
	}
	return nil
}

// draw draws a round of one or two faults on distinct clusters, each
// on a random shard, keeping those there is room for (marked out).
func (n *shardNemesis) draw() []shardFault {
	var faults []shardFault
	now := time.Now()
	for _, node := range n.rng.Perm(len(n.rc.Pools()))[:1+n.rng.IntN(2)] {
		f := shardFault{kind: pauseShard, node: node, shard: n.rng.IntN(n.rc.Shards()),
			hold: minHold + durN(n.rng, maxHold-minHold)}
		if n.rng.IntN(2) == 0 {
			f.kind, f.hold = killShard, n.ttl+restartMargin
		}
		if n.room.take(shardOut{node, f.shard}, faults, now) {
			faults = append(faults, f)
		}
	}
	return faults
}

// runUnsafe plays failover rounds until ctx ends, the clients' quarantine
// off: the negative control of the safe run's failover round.
func (n *shardNemesis) runUnsafe(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := n.failover(ctx, failoverUnsafe, false); err != nil {
			return err
		}
		sleep(ctx, time.Second)
	}
	return nil
}

// failover plays one failover round (kind) on the failover shard of two
// clusters drawn at random, once no cluster has had that shard out (the
// last round's quarantine, a killed master's) for recoverWindow, the time
// in which every workload must take a lock again (Result.Unexercised): their
// replicas are cut off, the holder takes its claims, and the replicas take
// over while they are valid. A round the holder could not take its claims
// for is asked again, a second apart, up to amnesiaAttempts times, or
// until it plays when untilPlayed (the run's first: every run has one).
// The error is a shard that could not be brought back.
func (n *shardNemesis) failover(ctx context.Context, kind string, untilPlayed bool) error {
	n.room.awaitClear(ctx, n.shard, recoverWindow)
	for attempt := 0; untilPlayed || attempt < amnesiaAttempts; attempt++ {
		if ctx.Err() != nil {
			return nil
		}
		if attempt > 0 {
			sleep(ctx, time.Second)
		}
		nodes := n.rng.Perm(len(n.rc.Pools()))[:len(n.rc.Pools())/2+1]
		played, err := n.failoverRound(ctx, nodes, kind)
		if played || err != nil {
			return err
		}
	}
	n.rounds.log.skip()
	n.logf("nemesis: failover round SKIPPED: the holder could not take its claims in %d attempts", amnesiaAttempts)
	return nil
}

// failoverRound cuts the replicas of the failover shard on clusters nodes,
// has the holder take its claims and, once it holds them, makes each
// replica take over (holderRound.play). It resumes the replicas when the
// round was not played.
func (n *shardNemesis) failoverRound(ctx context.Context, nodes []int, kind string) (bool, error) {
	bg := context.Background() // a cut replica is resumed, even when the run ends
	for _, node := range nodes {
		n.room.hold(shardOut{node, n.shard})
	}
	back := time.Now() // when the clients count the shard again: at once if not played
	defer func() {
		for _, node := range nodes {
			n.room.back(shardOut{node, n.shard}, back)
		}
	}()
	cut := make([]bool, len(nodes))
	err := n.each(nodes, func(j, node int) error {
		rctx, cancel := context.WithTimeout(bg, time.Minute)
		defer cancel()
		err := n.rc.CutReplica(rctx, node, n.shard)
		cut[j] = err == nil
		return err
	})
	h := n.rounds
	h.what = fmt.Sprintf("shard %d of clusters %v: %s", n.shard, nodes, kind)
	played := false
	if err == nil {
		played, err = h.play(ctx, func() error {
			defer func() { back = time.Now().Add(h.settle + sightLag) }()
			return n.each(nodes, func(_, node int) error {
				rctx, cancel := context.WithTimeout(bg, time.Minute)
				defer cancel()
				if err := n.rc.TakeOver(rctx, node, n.shard); err != nil {
					return err
				}
				n.faults.add(kind)
				return nil
			})
		})
	} else {
		n.logf("nemesis: failover round not played: %v", err)
		err = nil
	}
	if !played {
		for j, node := range nodes {
			if cut[j] {
				err = errors.Join(err, retry(func() error { return n.rc.ResumeReplica(bg, node, n.shard) }))
			}
		}
	}
	return played, err
}

// each runs op on clusters nodes in parallel (j: the index in nodes).
func (n *shardNemesis) each(nodes []int, op func(j, node int) error) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for j, node := range nodes {
		wg.Go(func() { errs[j] = op(j, node) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// play applies faults at once, each held for its time, and repairs them.
func (n *shardNemesis) play(faults []shardFault) error {
	errs := make([]error, len(faults))
	var wg sync.WaitGroup
	for i, f := range faults {
		wg.Go(func() { errs[i] = n.apply(f) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// apply injects f, waits for its hold (even when the run ends: a delayed
// restart stays delayed) and repairs the shard.
func (n *shardNemesis) apply(f shardFault) error {
	ctx := context.Background()
	inject, undo := n.rc.PauseShard, n.rc.ResumeShard
	if f.kind == killShard {
		inject, undo = n.rc.KillShard, func(ctx context.Context, node, shard int) error {
			rctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			return n.rc.RestartShard(rctx, node, shard)
		}
	}
	if err := inject(ctx, f.node, f.shard); err != nil {
		n.logf("nemesis: inject %s on cluster %d shard %d: %v", f.kind, f.node, f.shard, err)
	} else {
		n.faults.add(f.kind)
	}
	time.Sleep(f.hold)
	err := retry(func() error { return undo(ctx, f.node, f.shard) })
	back := time.Now() // a paused master kept its data
	if f.kind == killShard {
		back = back.Add(n.rounds.settle + sightLag) // the clients' shard check keeps it out
	}
	n.room.back(shardOut{f.node, f.shard}, back)
	return err
}

package chaos

import (
	"context"
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
)

// shardNemesis injects faults into single shards of Redis Clusters while the
// workers run: a killed master stays down past the TTL and comes back
// empty (every key it held has expired by then, as for a standalone node
// restarted late), a paused one comes back with everything. A round breaks
// one or two shards, on different clusters, so a key's majority may be
// lost (liveness) but never a key forgotten (safety).
type shardNemesis struct {
	rc     *cluster.RedisClusters
	ttl    time.Duration
	rng    *rand.Rand
	faults *faultLog
	logf   func(format string, args ...any)
}

// shardFault is one fault on one shard master.
type shardFault struct {
	kind        string
	node, shard int
	hold        time.Duration
}

// runSafe plays rounds of one or two shard faults until ctx ends. It
// returns an error only when a shard could not be brought back.
func (n *shardNemesis) runSafe(ctx context.Context) error {
	for ctx.Err() == nil {
		nodes := n.rng.Perm(len(n.rc.Pools()))[:1+n.rng.IntN(2)]
		faults := make([]shardFault, len(nodes))
		for i, node := range nodes {
			f := shardFault{kind: pauseShard, node: node, shard: n.rng.IntN(n.rc.Shards()),
				hold: minHold + durN(n.rng, maxHold-minHold)}
			if n.rng.IntN(2) == 0 {
				f.kind, f.hold = killShard, n.ttl+restartMargin
			}
			faults[i] = f
		}
		if err := n.play(faults); err != nil {
			return err
		}
		sleep(ctx, durN(n.rng, maxQuiet))
	}
	return nil
}

// runUnsafe implements schedule: clusters have no unsafe schedule
// (Config.withDefaults refuses it).
func (n *shardNemesis) runUnsafe(context.Context) error {
	return fmt.Errorf("chaos: no unsafe schedule on clusters")
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
	return retry(func() error { return undo(ctx, f.node, f.shard) })
}

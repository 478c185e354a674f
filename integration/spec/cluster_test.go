package spec_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

// keyOn returns a key of the test's own that shard serves.
func keyOn(t *testing.T, rc *cluster.RedisClusters, shard int) string {
	for i := 0; ; i++ {
		if k := fmt.Sprintf("%s:%d", key(t), i); rc.ShardOf(k) == shard {
			return k
		}
	}
}

// TestClusterShardFaults runs the lock on three Redis Clusters of three
// masters (containers, or processes without a Docker engine) with faults on
// single shards: a paused master costs its own keys that cluster's vote
// only, and they still lock, within the bound, on the other two clusters; a
// master restarted empty (its script cache too) serves fenced locks again at
// once; with one shard's master killed on two clusters, that shard's keys
// fail by the quorum while the other shards' keys lock, and waiters on them
// are woken across Clients by sharded notifications.
func TestClusterShardFaults(t *testing.T) {
	rc := cluster.StartRedisClusters(t, 3, 3)
	c, err := redlock.New(rc.Pools(), redlock.WithNodeTimeout(nodeTimeout))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	ctx := context.Background()

	t.Run("paused master", func(t *testing.T) {
		require.NoError(t, rc.PauseShard(ctx, 0, 0))
		t.Cleanup(func() { assert.NoError(t, rc.ResumeShard(ctx, 0, 0)) })
		for shard := range rc.Shards() {
			k := keyOn(t, rc, shard)
			start := time.Now()
			l, err := c.TryLock(ctx, k, 10*time.Second, redlock.WithFencing())
			took := time.Since(start)
			require.NoError(t, err, "shard %d", shard)
			assert.Less(t, took, slowBound, "shard %d: TryLock took %v", shard, took)
			if shard == 0 { // node 0 cannot vote: both others did
				for node := 1; node < 3; node++ {
					assert.Equal(t, l.Token(), rc.Client(node).Get(ctx, k).Val(), "node %d holds %q", node, k)
				}
			}
			require.NoError(t, l.Unlock(ctx))
		}
	})
	t.Run("master restarted empty", func(t *testing.T) {
		k := keyOn(t, rc, 1)
		l, err := c.TryLock(ctx, k, 10*time.Second, redlock.WithFencing())
		require.NoError(t, err)
		require.NoError(t, l.Unlock(ctx))
		require.NoError(t, rc.KillShard(ctx, 1, 1))
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		require.NoError(t, rc.RestartShard(rctx, 1, 1))
		l2, err := c.TryLock(ctx, k, 10*time.Second, redlock.WithFencing())
		require.NoError(t, err, "NOSCRIPT on the restarted master is answered with EVAL")
		assert.Greater(t, l2.Fence(), l.Fence(), "two of three clusters kept the counter")
		c1 := rc.Client(1)
		redistest.WaitFor(t, stragglerBound, "the restarted master to hold the key", func() (bool, string) {
			v, err := c1.Get(ctx, k).Result()
			return v == l2.Token(), fmt.Sprintf("%q, %v", v, err)
		})
		require.NoError(t, l2.Unlock(ctx))
	})
	t.Run("master killed on two clusters", func(t *testing.T) {
		require.NoError(t, rc.KillShard(ctx, 0, 2))
		require.NoError(t, rc.KillShard(ctx, 1, 2))
		t.Cleanup(func() {
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			assert.NoError(t, rc.RestartShard(rctx, 0, 2))
			assert.NoError(t, rc.RestartShard(rctx, 1, 2))
		})
		// The dead shard's keys: one cluster of three left, no majority.
		_, err := c.TryLock(ctx, keyOn(t, rc, 2), 10*time.Second)
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		var qe *redlock.QuorumError
		require.ErrorAs(t, err, &qe)
		assert.LessOrEqual(t, qe.Agreed, 1)
		// The live shards' keys lock, and a waiter in another Client, whose
		// own rounds come every 30s, is handed each within a second of its
		// release.
		waiter, err := redlock.New(rc.Pools(), redlock.WithNodeTimeout(nodeTimeout))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, waiter.Close()) })
		slow := redlock.WithRetry(redlock.ConstantBackoff(30 * time.Second))
		for _, shard := range []int{0, 1, 0} { // the first wait may go by plain channels, the later ones sharded
			k := keyOn(t, rc, shard)
			l, err := c.TryLock(ctx, k, 10*time.Second)
			require.NoError(t, err, "shard %d", shard)
			got := make(chan error, 1)
			var at time.Time
			go func() {
				wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				defer cancel()
				wl, err := waiter.Lock(wctx, k, 10*time.Second, slow)
				at = time.Now()
				if err == nil {
					err = wl.Unlock(ctx)
				}
				got <- err
			}()
			queued(t, rc, k, l.Token())
			released := time.Now()
			require.NoError(t, l.Unlock(ctx))
			require.NoError(t, <-got, "shard %d", shard)
			assert.Less(t, at.Sub(released), time.Second, "shard %d: woken %v after the release", shard, at.Sub(released))
		}
	})
}

// queued waits until a waiter queued for key on every cluster whose shard
// for key is alive and holds the holder's token.
func queued(t *testing.T, rc *cluster.RedisClusters, key, holder string) {
	t.Helper()
	queue := keyslot.Companion(key, "queue")
	// The waiter queues in its first round, one node call on each cluster
	// (each within a node timeout); 20 node timeouts, for a loaded machine.
	redistest.WaitFor(t, 20*nodeTimeout, fmt.Sprintf("a waiter queued for %q on a majority", key), func() (bool, string) {
		n, seen := 0, ""
		for node := range rc.Pools() {
			c := rc.Client(node)
			v, q := c.Get(context.Background(), key).Val(), c.ZCard(context.Background(), queue).Val()
			if v == holder && q > 0 {
				n++
			}
			seen += fmt.Sprintf("cluster %d: holder %v, %d queued; ", node, v == holder, q)
		}
		return n >= 2, seen
	})
}

package spec_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/integration/cluster"
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
// masters with faults on single shards: a paused master costs its own keys
// that cluster's vote only, and they still lock, within the bound, on the
// other two clusters; a master restarted empty (its script cache too) serves fenced
// locks again at once.
func TestClusterShardFaults(t *testing.T) {
	rc := cluster.StartRedisClusters(t, 3, 3)
	c, err := redlock.New(rc.Pools(), redlock.WithNodeTimeout(nodeTimeout))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	ctx := context.Background()

	t.Run("paused master", func(t *testing.T) {
		rc.PauseShard(0, 0)
		t.Cleanup(func() { rc.ResumeShard(0, 0) })
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
		rc.KillShard(1, 1)
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		require.NoError(t, rc.RestartShard(rctx, 1, 1))
		l2, err := c.TryLock(ctx, k, 10*time.Second, redlock.WithFencing())
		require.NoError(t, err, "NOSCRIPT on the restarted master is answered with EVAL")
		assert.Greater(t, l2.Fence(), l.Fence(), "two of three clusters kept the counter")
		c1 := rc.Client(1)
		assert.Eventually(t, func() bool { return c1.Get(ctx, k).Val() == l2.Token() },
			5*time.Second, 5*time.Millisecond, "the restarted master holds the key")
		require.NoError(t, l2.Unlock(ctx))
	})
}

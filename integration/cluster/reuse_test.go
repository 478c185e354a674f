package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/pool"
)

// Under Reuse (TestMain), a cluster a test left killed, paused, partitioned,
// slow and full serves the next test of the same options: the same proxies,
// every node answering through its own, empty of keys and scripts, and
// declared fresh for the run it is in.
func TestReuseHandsBackAHealthyEmptyCluster(t *testing.T) {
	opts := []cluster.Option{cluster.WithNodes(3), cluster.WithNodePersistence(2, cluster.AOFEverySec)} // this test's alone
	var addrs []string
	var sha string
	t.Run("left faulted", func(t *testing.T) {
		c := cluster.Start(t, opts...)
		if c.Backend() != cluster.Containers {
			t.Skip("only container clusters are kept")
		}
		ctx := t.Context()
		for _, n := range c.Nodes() {
			addrs = append(addrs, n.Addr())
			require.NoError(t, n.Client().Set(ctx, "k", "v", 0).Err())
			var err error
			sha, err = n.Client().ScriptLoad(ctx, "return 1").Result()
			require.NoError(t, err)
		}
		require.NoError(t, c.Node(0).SlowHandshake(time.Hour, 1))
		require.NoError(t, c.Node(0).Kill(ctx))
		require.NoError(t, c.Node(1).Pause(ctx))
		require.NoError(t, c.Node(2).Partition())
		require.NoError(t, c.Node(2).Slow(time.Hour))
	})
	t.Run("reused", func(t *testing.T) {
		if addrs == nil {
			t.Skip("only container clusters are kept")
		}
		c := cluster.Start(t, opts...)
		ctx := t.Context()
		for i, n := range c.Nodes() {
			require.Equal(t, addrs[i], n.Addr(), "the same cluster (its proxy)")
			rc := viaProxy(t, n)
			require.NoError(t, ping(rc, 5*time.Second), n.String())
			require.ErrorIs(t, rc.Get(ctx, "k").Err(), redis.Nil, "%v emptied", n)
			loaded, err := rc.ScriptExists(ctx, sha).Result()
			require.NoError(t, err)
			require.Equal(t, []bool{false}, loaded, "%v's scripts flushed", n)
			declared, err := rc.Get(ctx, pool.FreshStartKey).Result()
			require.NoError(t, err, "%v declared fresh", n)
			require.Equal(t, runID(t, ctx, rc), declared, "%v declared fresh in its current run", n)
		}
	})
}

// runID returns the run_id of rc's server.
func runID(t *testing.T, ctx context.Context, rc *redis.Client) string {
	t.Helper()
	info, err := rc.Info(ctx, "server").Result()
	require.NoError(t, err)
	for line := range strings.Lines(info) {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return id
		}
	}
	t.Fatal("INFO server has no run_id")
	return ""
}

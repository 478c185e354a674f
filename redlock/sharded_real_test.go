package redlock_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// Between a wait's start and the release, the sharded tests check where
// the waiter subscribed and queued (two waits of up to 10s each, and INFO
// on every master): with a full rebuild beside the package that took over
// the 5s of a faultTTL lease and of waitFor. So the holder's lease
// (shardedHold) and the waiter's context (shardedWait) outlast both waits,
// and the waiter's retries (shardedRetry: 30s to 60s) come after its
// context ended: only a wake-up lets it in.
const (
	shardedHold = 40 * time.Second
	shardedWait = 25 * time.Second
)

var shardedRetry = redlock.WithRetry(redlock.ConstantBackoff(time.Minute))

// holdFor takes key for shardedHold, retrying for up to 10s: the holder is
// setup, and a first TryLock missed the node timeout on every node
// with a full rebuild beside the package.
func holdFor(holder *redlock.Client, key string) (*redlock.Lock, error) {
	ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
	defer cancel()
	return holder.Lock(ctx, key, shardedHold)
}

// shardedWakes checks, on Redis 7 clusters, that a waiter in another Client
// (whose own rounds come every 30s to 60s) is handed the lock, and a blocked
// LockAll is woken, within a second of the release, through sharded pub/sub:
// the waiter's Client subscribed with SSUBSCRIBE on the master that owns the
// key's slot, and only there; the release published with SPUBLISH on that
// shard, and no master of any cluster ran a PUBLISH or sent a published
// message over the cluster bus (CLUSTER INFO).
func shardedWakes(t *testing.T, clusters []*redistest.Cluster, pools []pool.Pool, key string) {
	slow := shardedRetry
	holder := defaultClient(t, pools)
	waiter := defaultClient(t, pools)
	require.Eventually(t, func() bool { return waiter.ShardedNodes() == len(pools) }, 10*time.Second,
		5*time.Millisecond, "the waiter's listeners found sharded pub/sub on every cluster")
	calls := map[string]func(ctx context.Context) (*redlock.Lock, error){
		"Lock": func(ctx context.Context) (*redlock.Lock, error) { return waiter.Lock(ctx, key, faultTTL, slow) },
		"LockAll": func(ctx context.Context) (*redlock.Lock, error) {
			return waiter.LockAll(ctx, []string{key}, faultTTL, slow)
		},
	}
	for name, call := range calls {
		l, err := holdFor(holder, key)
		require.NoError(t, err, name)
		holder.WaitIdle()
		got := waitForUpTo(shardedWait, call)
		requireShardSubscribed(t, clusters, key)
		if name == "Lock" {
			requireClusterQueued(t, clusters, key, l.Token())
		} else {
			requireClusterWatched(t, clusters, key)
		}
		before := publishes(t, clusters)
		released := time.Now()
		require.NoError(t, l.Unlock(bg()))
		o := <-got
		require.NoError(t, o.err, name)
		assert.Less(t, o.at.Sub(released), bound, "%s: woken %v after the release", name, o.at.Sub(released))
		after := publishes(t, clusters)
		sharded := 0
		for i, cl := range clusters {
			for j, m := range cl.Masters {
				assert.Equal(t, before[i][j].plain, after[i][j].plain, "%s: node %d master %d ran PUBLISH", name, i, j)
				assert.Equal(t, before[i][j].broadcast, after[i][j].broadcast,
					"%s: node %d master %d sent a message over the cluster bus", name, i, j)
				if m != cl.MasterOf(key) {
					assert.Equal(t, before[i][j].sharded, after[i][j].sharded, "%s: node %d master %d does not own %q", name, i, j, key)
				} else if after[i][j].sharded > before[i][j].sharded {
					sharded++
				}
			}
		}
		assert.Greater(t, sharded, len(clusters)/2, "%s: the owning shards of a majority ran SPUBLISH", name)
		require.NoError(t, o.l.Unlock(bg()))
	}
}

// requireShardSubscribed waits until, on every cluster, the master that owns
// key's slot lists a sharded grant channel in that slot, and no other
// master lists one.
func requireShardSubscribed(t *testing.T, clusters []*redistest.Cluster, key string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, cl := range clusters {
			for _, m := range cl.Masters {
				found := false
				for _, ch := range m.Client(t).PubSubShardChannels(bg(), "*redlock:grant:*").Val() {
					found = found || keyslot.Slot(ch) == keyslot.Slot(key)
				}
				if found != (m == cl.MasterOf(key)) {
					return false
				}
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "the owning shards, and only they, have the sharded channel of %q", key)
}

// requireClusterWatched waits until a watcher registered for key on a
// majority of the clusters, which is what a wake-up needs: an attempt that
// a majority refused cuts the last node's call short after a grace
// (contendedGrace), so on a loaded machine its registration may never land
// there.
func requireClusterWatched(t *testing.T, clusters []*redistest.Cluster, key string) {
	t.Helper()
	w := keyspace.Cluster{}.Watch(key)
	clients := clusterClients(t, clusters)
	require.Eventually(t, func() bool {
		n := 0
		for _, c := range clients {
			if c.ZCard(bg(), w).Val() >= 1 {
				n++
			}
		}
		return n > len(clients)/2
	}, 10*time.Second, 5*time.Millisecond, "a watcher registered for %q on a majority", key)
}

// counts are how many PUBLISH and SPUBLISH calls a master ran, and how many
// published messages it sent to the other masters over the cluster bus.
type counts struct{ plain, sharded, broadcast int64 }

// publishes returns each master's counts, from INFO commandstats (which
// counts the commands scripts call).
func publishes(t *testing.T, clusters []*redistest.Cluster) [][]counts {
	t.Helper()
	out := make([][]counts, len(clusters))
	for i, cl := range clusters {
		out[i] = make([]counts, len(cl.Masters))
		for j, m := range cl.Masters {
			info, err := m.Client(t).Info(bg(), "commandstats").Result()
			require.NoError(t, err)
			bus, err := m.Client(t).ClusterInfo(bg()).Result()
			require.NoError(t, err)
			out[i][j] = counts{plain: calls(info, "publish"), sharded: calls(info, "spublish"),
				broadcast: field(bus, "cluster_stats_messages_publish_sent")}
		}
	}
	return out
}

// field reads name:N from CLUSTER INFO; 0 if absent.
func field(info, name string) int64 {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// calls reads cmdstat_<cmd>:calls=N from INFO commandstats; 0 if absent.
func calls(info, cmd string) int64 {
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls=")
		if ok {
			n, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
			return n
		}
	}
	return 0
}

// TestRealClusterWithoutShardedPubSub runs on clusters whose masters lack
// SSUBSCRIBE and SPUBLISH (renamed away, as on a server older than 7.0):
// the Client finds out and registers its plain channel, so the releases
// publish with PUBLISH, no shard channel is ever subscribed, and a waiter
// in another Client is still woken within a second, wait after wait.
func TestRealClusterWithoutShardedPubSub(t *testing.T) {
	parallel(t)
	clusters := redistest.StartClusters(t, 3, 1, redistest.NoPersistence,
		"--rename-command", "SSUBSCRIBE", "", "--rename-command", "SPUBLISH", "")
	pools := make([]pool.Pool, len(clusters))
	for i, cl := range clusters {
		p, err := pool.FromURL("redis+cluster://" + cl.Addrs()[0])
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		pools[i] = p
	}
	// The first TryLock loads the slot maps and dials under the default
	// node timeout: in a CI-equivalent run beside the package's other
	// tests, two of the three nodes missed it.
	warm(t, pools)
	holder := defaultClient(t, pools)
	waiter := defaultClient(t, pools)
	slow := shardedRetry
	for i := range 3 {
		key := "plain:" + strconv.Itoa(i)
		l, err := holdFor(holder, key)
		require.NoError(t, err)
		holder.WaitIdle()
		got := waitForUpTo(shardedWait, func(ctx context.Context) (*redlock.Lock, error) { return waiter.Lock(ctx, key, faultTTL, slow) })
		requireClusterQueued(t, clusters, key, l.Token())
		before := publishes(t, clusters)
		released := time.Now()
		require.NoError(t, l.Unlock(bg()))
		o := <-got
		require.NoError(t, o.err, key)
		assert.Less(t, o.at.Sub(released), bound, "%q: woken %v after the release", key, o.at.Sub(released))
		after := publishes(t, clusters)
		plain := 0
		for j := range clusters {
			if after[j][0].plain > before[j][0].plain {
				plain++
			}
			assert.Empty(t, clusters[j].Masters[0].Client(t).PubSubShardChannels(bg(), "*").Val(), "node %d", j)
		}
		assert.Greater(t, plain, len(clusters)/2, "%q: the grants went out with PUBLISH", key)
		require.NoError(t, o.l.Unlock(bg()))
	}
	assert.Zero(t, waiter.ShardedNodes(), "no node has sharded pub/sub")
}

package redlock_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// These tests run on real Redis Clusters: each Redlock node is a cluster of
// masters, one redis-server process per shard (redistest.StartCluster).

// clusterNodes starts n clusters of m masters and returns them with one pool
// each, made by pool.New over a go-redis ClusterClient.
func clusterNodes(t *testing.T, n, m int) ([]*redistest.Cluster, []pool.Pool) {
	t.Helper()
	clusters := redistest.StartClusters(t, n, m, redistest.NoPersistence)
	pools := make([]pool.Pool, n)
	for i := range clusters {
		addrs := clusters[i].Addrs()
		p, err := pool.FromURL("redis+cluster://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr="))
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		pools[i] = p
	}
	return clusters, pools
}

// clusterKeys are lock keys over many slots, among them keys with hash tags
// of their own and keys with braces that make no tag.
func clusterKeys() []string {
	keys := []string{"{orders}:1", "{orders}:2", "x{y}z", "a}b", "{}", "{}{t}", "a{b", "}{"}
	for i := range 24 {
		keys = append(keys, fmt.Sprintf("res:%d", i))
	}
	return keys
}

// requireInSlot checks on every cluster that CLUSTER KEYSLOT puts the
// companion key in key's slot, and that it exists on a majority (a node may
// have missed the writes, as the lock allows).
func requireInSlot(t *testing.T, clusters []*redistest.Cluster, key, companion string) {
	t.Helper()
	requireInSlotOn(t, clusterClients(t, clusters), key, companion)
}

// clusterClients returns one client per cluster, to look at the nodes.
func clusterClients(t *testing.T, clusters []*redistest.Cluster) []*redis.ClusterClient {
	out := make([]*redis.ClusterClient, len(clusters))
	for i, cl := range clusters {
		out[i] = cl.Client(t)
	}
	return out
}

// requireInSlotOn is requireInSlot with a client per cluster.
func requireInSlotOn(t *testing.T, clients []*redis.ClusterClient, key, companion string) {
	t.Helper()
	exists := 0
	for _, c := range clients {
		want, err := c.ClusterKeySlot(bg(), key).Result()
		require.NoError(t, err)
		got, err := c.ClusterKeySlot(bg(), companion).Result()
		require.NoError(t, err)
		require.Equal(t, want, got, "%q is in the slot of %q", companion, key)
		require.Equal(t, int64(keyslot.Slot(key)), want, "keyslot.Slot(%q)", key)
		n, err := c.Exists(bg(), companion).Result()
		require.NoError(t, err)
		exists += int(n)
	}
	require.Greater(t, exists, len(clients)/2, "%q exists on a majority", companion)
}

func TestRealClusterLocksFencesQueuesAndGrantsOverManySlots(t *testing.T) {
	first(t) // 32 keys, each kind of lock, over 3 clusters: 7.5s alone, 24-32s beside the others
	clusters, pools := clusterNodes(t, 3, 3)
	// What a and b check is what the clusters hold and answer, not when:
	// with a full rebuild beside the package, a TryLock of a's missed
	// newClient's 1s on all three clusters.
	a := newPatientClient(t, pools)
	b := newPatientClient(t, pools)
	keys := clusterKeys()
	slots := map[int]bool{}
	for _, key := range keys {
		slots[keyslot.Slot(key)] = true
	}
	require.Greater(t, len(slots), 20, "the keys spread over many slots")

	t.Run("plain and extended", func(t *testing.T) {
		for _, key := range keys {
			l, err := a.TryLock(bg(), key, 10*time.Second)
			require.NoError(t, err, key)
			_, err = b.TryLock(bg(), key, 10*time.Second)
			require.ErrorIs(t, err, redlock.ErrNotObtained, key)
			require.NoError(t, l.Extend(bg(), 10*time.Second), key)
			require.NoError(t, l.Unlock(bg()), key)
		}
	})
	t.Run("fenced", func(t *testing.T) {
		clients := clusterClients(t, clusters)
		for _, key := range keys {
			var last uint64
			for range 3 {
				l, err := a.TryLock(bg(), key, 10*time.Second, redlock.WithFencing())
				require.NoError(t, err, key)
				require.Greater(t, l.Fence(), last, "fences of %q increase", key)
				last = l.Fence()
				require.NoError(t, l.Unlock(bg()))
			}
			requireInSlotOn(t, clients, key, redlock.ClusterFenceKey(key))
			// One name on every kind of node.
			assert.Equal(t, redlock.FenceKey(key), redlock.ClusterFenceKey(key))
		}
	})
	t.Run("fair", func(t *testing.T) {
		for _, key := range keys {
			l, err := a.TryLock(bg(), key, 10*time.Second, redlock.WithFairness())
			require.NoError(t, err, key)
			require.NoError(t, l.Unlock(bg()), key)
		}
	})
	t.Run("a release wakes a waiter of another Client within a second", func(t *testing.T) {
		releaseWakes(t, clusters, pools, "res:1", "{orders}:7", "a}b", "res:2")
	})
	t.Run("grants and wake-ups are sharded", func(t *testing.T) {
		shardedWakes(t, clusters, pools, "res:3")
		shardedWakes(t, clusters, pools, "{orders}:8")
	})
	t.Run("the lock family", func(t *testing.T) { clusterFamily(t, clusters, pools, keys) })
	// Every call went straight to the shard that owns its key: no master
	// ever answered MOVED or ASK (Redis counts the errors it replies).
	for i, cl := range clusters {
		for _, m := range cl.Masters {
			info, err := m.Client(t).Info(bg(), "errorstats").Result()
			require.NoError(t, err)
			assert.NotContains(t, info, "errorstat_MOVED", "node %d master %s redirected", i, m.Addr())
			assert.NotContains(t, info, "errorstat_ASK", "node %d master %s redirected", i, m.Addr())
			assert.NotContains(t, info, "errorstat_CROSSSLOT", "node %d master %s", i, m.Addr())
		}
	}
}

// requireClusterQueued waits until a waiter has queued for key on every
// cluster where the holder's token is set.
func requireClusterQueued(t *testing.T, clusters []*redistest.Cluster, key, holder string) {
	t.Helper()
	queue := keyslot.Companion(key, "queue")
	clients := clusterClients(t, clusters)
	require.Eventually(t, func() bool {
		for _, c := range clients {
			if c.Get(bg(), key).Val() == holder && c.ZCard(bg(), queue).Val() < 1 {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "a waiter queued for %q", key)
}

// releaseWakes checks that a waiter in another Client, whose own rounds come
// every 30s, gets each key within a second of its release: only the grant,
// heard through the cluster, can wake it so soon.
func releaseWakes(t *testing.T, clusters []*redistest.Cluster, pools []pool.Pool, keys ...string) {
	releaseWakesWithin(t, clusters, pools, bound, keys...)
}

// releaseWakesWithin is releaseWakes with its bound on the hand-off.
func releaseWakesWithin(t *testing.T, clusters []*redistest.Cluster, pools []pool.Pool, within time.Duration, keys ...string) {
	// The holder's node timeout is not what is checked: 2s, so that its
	// TryLock and Unlock hold under the package's load (its TryLock at the
	// default 250ms had no answer from any of the three clusters in a quiet
	// -cpu 1,2 run). The waiter keeps the defaults.
	holder := newClient(t, pools, redlock.WithNodeTimeout(2*time.Second))
	waiter := defaultClient(t, pools)
	slow := redlock.WithRetry(redlock.ConstantBackoff(30 * time.Second))
	for _, key := range keys {
		l, err := holder.TryLock(bg(), key, faultTTL)
		require.NoError(t, err, key)
		holder.WaitIdle()
		got := make(chan outcome, 1)
		go func() {
			ctx, cancel := context.WithTimeout(bg(), 20*time.Second)
			defer cancel()
			l, err := waiter.Lock(ctx, key, faultTTL, slow)
			got <- outcome{l, err, time.Now()}
		}()
		requireClusterQueued(t, clusters, key, l.Token())
		released := time.Now()
		require.NoError(t, l.Unlock(bg()))
		o := <-got
		require.NoError(t, o.err, key)
		assert.Less(t, o.at.Sub(released), within, "%q: the waiter got the lock %v after the release", key, o.at.Sub(released))
		// Its release may be answered past 250ms under load; each key is
		// used once, so nothing waits for it.
		if err := o.l.Unlock(bg()); err != nil {
			require.ErrorIs(t, err, redlock.ErrNotReleased, key)
		}
	}
}

// keysOfShard returns n keys whose slot is served by the shard-th master of
// every cluster (redistest.StartCluster splits the slots the same way).
func keysOfShard(t *testing.T, cl *redistest.Cluster, shard, n int) []string {
	var keys []string
	for i := 0; len(keys) < n; i++ {
		key := fmt.Sprintf("shard-key:%d", i)
		if cl.MasterOf(key) == cl.Masters[shard] {
			keys = append(keys, key)
		}
	}
	return keys
}

func TestRealClusterShardMasterKilledMidRun(t *testing.T) {
	parallel(t)
	clusters, pools := clusterNodes(t, 3, 3)
	c := newClient(t, pools)
	dead := keysOfShard(t, clusters[0], 0, 4)
	live := append(keysOfShard(t, clusters[0], 1, 4), keysOfShard(t, clusters[0], 2, 4)...)

	// Locks on the other shards' keys run on, before, during and after the
	// kills, and none fails.
	stop := make(chan struct{})
	failures := make(chan error, 1000)
	done := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			key := live[n%len(live)]
			l, err := c.TryLock(bg(), key, 10*time.Second)
			if err == nil {
				err = l.Unlock(bg())
			}
			if err != nil {
				failures <- fmt.Errorf("%s: %w", key, err)
			}
			n++
		}
	}()

	// Shard 0 of node 0 dies: its keys still lock, on nodes 1 and 2.
	clusters[0].Masters[0].Kill()
	for _, key := range dead {
		l, err := c.TryLock(bg(), key, 10*time.Second)
		require.NoError(t, err, "%q: two of three nodes are a majority", key)
		for i, cl := range clusters[1:] {
			require.Equal(t, l.Token(), cl.Client(t).Get(bg(), key).Val(), "node %d holds %q", i+1, key)
		}
		require.NoError(t, l.Unlock(bg()))
	}
	// Shard 0 of node 1 dies too: its keys have one node left, and fail.
	clusters[1].Masters[0].Kill()
	for _, key := range dead {
		_, err := c.TryLock(bg(), key, 10*time.Second)
		require.ErrorIs(t, err, redlock.ErrNotObtained, key)
		var qe *redlock.QuorumError
		require.ErrorAs(t, err, &qe)
		assert.LessOrEqual(t, qe.Agreed, 1, "only node 2 serves %q", key)
		c2 := clusters[2].Client(t)
		require.Eventually(t, func() bool { return c2.Exists(bg(), key).Val() == 0 },
			10*time.Second, 5*time.Millisecond, "the failed attempt released %q", key)
	}
	// The dead masters were the first seeds of their clusters: with node 2's
	// gone too, new Clients' listeners must all move on to the next seed
	// for the grants to arrive.
	clusters[2].Masters[0].Kill()
	t.Run("grants with the first seeds dead", func(t *testing.T) {
		// Keys of the live shards that the background locks do not use.
		// The new waiter's listeners connect after a failed dial to the
		// dead seed; a release before they are confirmed is caught by the
		// round the waiter sends once they are (see
		// TestRealClusterGrantBeforeTheListenerConnects), within a second.
		releaseWakesWithin(t, clusters, pools, bound,
			keysOfShard(t, clusters[2], 1, 5)[4], keysOfShard(t, clusters[2], 2, 5)[4])
	})
	close(stop)
	n := <-done
	close(failures)
	for err := range failures {
		t.Errorf("a lock on a live shard failed: %v", err)
	}
	assert.Greater(t, n, 10, "locks ran on the live shards throughout")
}

// TestRealClusterGrantBeforeTheListenerConnects releases a key while the
// waiter's Client cannot hear it yet: its listeners' connections (new
// dials) take 400ms, the lock's commands run on connections already open,
// and the release comes as soon as the waiter is queued, before any node
// lists a grant channel. The grant is announced to nobody; the waiter must
// still get the lock within a second of the release, with rounds every 30s
// and a heartbeat of 1.67s: the round it sends once its listeners are
// confirmed finds the grant.
func TestRealClusterGrantBeforeTheListenerConnects(t *testing.T) {
	held := parallel(t)
	clusters := redistest.StartClusters(t, 3, 2, redistest.NoPersistence) // 2s of a run's 4s
	held.alone(t)
	var slow atomic.Bool
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if slow.Load() {
			timer := time.NewTimer(400 * time.Millisecond)
			defer timer.Stop()
			select {
			case <-timer.C:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	pools := make([]pool.Pool, len(clusters))
	for i, cl := range clusters {
		// Idle connections enough for a Lock's attempt, its rounds and
		// the releases in the background, dialled while dials are fast.
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), Dialer: dial,
			ContextTimeoutEnabled: true, MaxRetries: -1, MinIdleConns: 8})
		t.Cleanup(func() { _ = c.Close() })
		pools[i] = pool.New(c)
	}
	holder, waiter := defaultClient(t, pools), defaultClient(t, pools)
	clients := clusterClients(t, clusters)
	for i, key := range []string{"early:1", "{early}:2", "early:3"} {
		// Connections for the commands, open before dials turn slow.
		for _, c := range []*redlock.Client{holder, waiter} {
			l, err := c.TryLock(bg(), key, faultTTL)
			require.NoError(t, err)
			require.NoError(t, l.Unlock(bg()))
		}
		holder.WaitIdle()
		waiter.WaitIdle()
		if i == 0 {
			slow.Store(true)
		}
		l, err := holder.TryLock(bg(), key, faultTTL)
		require.NoError(t, err, key)
		holder.WaitIdle()
		got := waitFor(func(ctx context.Context) (*redlock.Lock, error) {
			return waiter.Lock(ctx, key, faultTTL, redlock.WithRetry(redlock.ConstantBackoff(30*time.Second)))
		})
		requireClusterQueued(t, clusters, key, l.Token())
		if i == 0 { // the premise: nobody listens yet
			for j, c := range clients {
				require.NoError(t, c.ForEachMaster(bg(), func(ctx context.Context, m *redis.Client) error {
					assert.Empty(t, m.PubSubChannels(ctx, "*redlock:grant:*").Val(), "node %d", j)
					assert.Empty(t, m.PubSubShardChannels(ctx, "*redlock:grant:*").Val(), "node %d", j)
					return nil
				}))
			}
		}
		released := time.Now()
		require.NoError(t, l.Unlock(bg()))
		o := <-got
		require.NoError(t, o.err, key)
		assert.Less(t, o.at.Sub(released), bound, "%q: the waiter got the lock %v after the release", key, o.at.Sub(released))
		require.NoError(t, o.l.Unlock(bg()))
	}
}

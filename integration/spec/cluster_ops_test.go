package spec_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

// shardFault is a fault on one shard master of one cluster, and its end.
type shardFault struct {
	name  string
	start func(rc *cluster.RedisClusters, ctx context.Context, node, shard int) error
	end   func(rc *cluster.RedisClusters, ctx context.Context, node, shard int) error
}

var shardFaults = []shardFault{
	{
		name:  "paused",
		start: (*cluster.RedisClusters).PauseShard,
		end:   (*cluster.RedisClusters).ResumeShard,
	},
	{
		name:  "killed",
		start: (*cluster.RedisClusters).KillShard,
		end: func(rc *cluster.RedisClusters, ctx context.Context, node, shard int) error {
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			return rc.RestartShard(ctx, node, shard)
		},
	},
}

// TestClusterOpsWithOneShardMasterDown runs lock, extend, unlock and
// contention on three Redis Clusters of three masters (containers, or
// processes without a Docker engine) while shard 0's master of cluster 0
// is paused, then killed. Keys of shards 1 and 2 are unaffected: every
// cluster, cluster 0 included, holds, extends and frees them. Shard 0's
// keys lock on the two other clusters, within the bound. With shard 0's
// master down on cluster 1 too, the quorum decides: shard 0's keys fail
// with one vote of three, the other shards' keys still lock on all three.
func TestClusterOpsWithOneShardMasterDown(t *testing.T) {
	rc := cluster.StartRedisClusters(t, 3, 3)
	t.Logf("clusters on %s", rc.Backend())
	ctx := context.Background()
	// Clients to look at the clusters, and the Clients' pools, learn the
	// slot map and the commands' key positions before any fault: what is
	// tested here is a running service, not one that starts while a master
	// is frozen (a new pool's first second: pool/cluster_frozen_test.go).
	clients := make([]*redis.ClusterClient, len(rc.Pools()))
	for node := range clients {
		clients[node] = rc.Client(node)
		require.ErrorIs(t, clients[node].Get(ctx, "it:warm").Err(), redis.Nil)
	}
	a := clusterClient(t, rc)
	b := clusterClient(t, rc)
	l, err := a.TryLock(ctx, "it:warm", time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Unlock(ctx))
	for _, f := range shardFaults {
		t.Run(f.name, func(t *testing.T) {
			require.NoError(t, f.start(rc, ctx, 0, 0))
			ended := false
			t.Cleanup(func() {
				if !ended {
					assert.NoError(t, f.end(rc, ctx, 0, 0))
				}
			})
			for shard := range rc.Shards() {
				k := keyOn(t, rc, shard)
				voters := []int{1, 2}
				if shard != 0 {
					voters = []int{0, 1, 2}
				}
				t.Run(fmt.Sprintf("shard %d lock, extend, unlock", shard), func(t *testing.T) {
					lockExtendUnlock(t, a, b, clients, k, voters)
				})
				t.Run(fmt.Sprintf("shard %d contention", shard), func(t *testing.T) {
					contendOnCluster(t, []*redlock.Client{a, b}, clients, k, voters)
				})
			}
			t.Run("quorum", func(t *testing.T) {
				require.NoError(t, f.start(rc, ctx, 1, 0))
				defer func() { assert.NoError(t, f.end(rc, ctx, 1, 0)) }()
				_, err := a.TryLock(ctx, keyOn(t, rc, 0), 10*time.Second)
				require.ErrorIs(t, err, redlock.ErrNotObtained)
				var qe *redlock.QuorumError
				require.ErrorAs(t, err, &qe)
				assert.LessOrEqual(t, qe.Agreed, 1, "only cluster 2 serves shard 0")
				for shard := 1; shard < rc.Shards(); shard++ {
					lockExtendUnlock(t, a, b, clients, keyOn(t, rc, shard), []int{0, 1, 2})
				}
			})
			ended = true
			require.NoError(t, f.end(rc, ctx, 0, 0))
		})
	}
}

// clusterClient returns a Client over rc's pools with the suite's node
// timeout, closed when t ends.
func clusterClient(t *testing.T, rc *cluster.RedisClusters) *redlock.Client {
	t.Helper()
	c, err := redlock.New(rc.Pools(), redlock.WithNodeTimeout(nodeTimeout))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	return c
}

// lockExtendUnlock locks k with a, within the bound; checks that each of
// voters (cluster indexes) holds the token, that b is refused, and that an
// extension reaches the voters; then unlocks and checks that they let k go.
func lockExtendUnlock(t *testing.T, a, b *redlock.Client, clients []*redis.ClusterClient, k string, voters []int) {
	t.Helper()
	ctx := context.Background()
	const ttl = 10 * time.Second
	start := time.Now()
	l, err := a.TryLock(ctx, k, ttl, redlock.WithFencing())
	took := time.Since(start)
	require.NoError(t, err, k)
	assert.Less(t, took, slowBound, "%q: TryLock took %v", k, took)
	// TryLock returns at the majority: a voter's SET may still be on its
	// way. b tries only once every voter holds a's token, or b's SET could
	// take that voter first, and a's late SET would rightly find it taken.
	for _, node := range voters {
		redistest.WaitFor(t, stragglerBound, fmt.Sprintf("cluster %d to hold %q", node, k), func() (bool, string) {
			v, err := clients[node].Get(ctx, k).Result()
			return v == l.Token(), fmt.Sprintf("%q, %v", v, err)
		})
	}
	_, err = b.TryLock(ctx, k, ttl)
	require.ErrorIs(t, err, redlock.ErrNotObtained, "%q is held", k)

	start = time.Now()
	require.NoError(t, l.Extend(ctx, 3*ttl), k)
	took = time.Since(start)
	assert.Less(t, took, slowBound, "%q: Extend took %v", k, took)
	for _, node := range voters {
		redistest.WaitFor(t, stragglerBound, fmt.Sprintf("cluster %d to extend %q past %v", node, k, ttl), func() (bool, string) {
			d, err := clients[node].PTTL(ctx, k).Result()
			return d > ttl, fmt.Sprintf("PTTL %v, %v", d, err)
		})
	}

	start = time.Now()
	require.NoError(t, l.Unlock(ctx), k)
	took = time.Since(start)
	assert.Less(t, took, slowBound, "%q: Unlock took %v", k, took)
	for _, node := range voters {
		redistest.WaitFor(t, stragglerBound, fmt.Sprintf("cluster %d to let %q go", node, k), func() (bool, string) {
			n, err := clients[node].Exists(ctx, k).Result()
			return n == 0, fmt.Sprintf("EXISTS %d, %v", n, err)
		})
	}
}

// contendOnCluster has two goroutines per Client take k in turn, three
// times each, with Lock; none may see another inside, and each holder
// finds its token on a majority of the clusters, among voters (the
// clusters whose shard of k is up).
func contendOnCluster(t *testing.T, clients []*redlock.Client, nodes []*redis.ClusterClient, k string, voters []int) {
	t.Helper()
	var inside, taken atomic.Int32
	var wg sync.WaitGroup
	for _, cl := range clients {
		for range 2 {
			wg.Go(func() {
				for range 3 {
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					l, err := cl.Lock(ctx, k, 4*time.Second)
					cancel()
					if !assert.NoError(t, err, k) {
						return
					}
					assert.EqualValues(t, 1, inside.Add(1), "%q: two holders at once", k)
					held := 0
					for _, node := range voters {
						if nodes[node].Get(context.Background(), k).Val() == l.Token() {
							held++
						}
					}
					assert.Greater(t, held, len(nodes)/2, "%q: the holder's token on a majority", k)
					inside.Add(-1)
					taken.Add(1)
					assert.NoError(t, l.Unlock(context.Background()), k)
				}
			})
		}
	}
	wg.Wait()
	assert.EqualValues(t, 2*len(clients)*3, taken.Load(), "%q: every Lock got it", k)
}

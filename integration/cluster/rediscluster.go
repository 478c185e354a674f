package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
)

// RedisClusters is a set of independent Redis Clusters for one test, each
// of which is one Redlock node made of several masters (shards), as local
// redis-server processes. StartRedisClusters creates it; it is removed when
// the test ends.
//
// There are no proxies and no containers here: a cluster client connects to
// the addresses the shards announce, which a proxy in front of a seed would
// not cover. Faults are per shard: kill, restart, pause.
type RedisClusters struct {
	tb       testing.TB
	clusters []*redistest.Cluster
	pools    []pool.Pool
}

// StartRedisClusters runs n clusters of masters shards each (slots split
// evenly, in the same way on every cluster, with
// cluster-require-full-coverage no) and one Pool per cluster, made by
// pool.FromURL from a redis+cluster:// URL. It fails tb on error and skips
// it, outside CI, when redis-server is not installed and REDLOCK_SKIP_REDIS
// is set.
func StartRedisClusters(tb testing.TB, n, masters int) *RedisClusters {
	tb.Helper()
	r := &RedisClusters{tb: tb, clusters: redistest.StartClusters(tb, n, masters, redistest.NoPersistence)}
	for _, c := range r.clusters {
		addrs := c.Addrs()
		p, err := pool.FromURL("redis+cluster://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr="))
		if err != nil {
			tb.Fatalf("cluster: %v", err)
		}
		tb.Cleanup(func() { _ = p.Close() })
		r.pools = append(r.pools, p)
	}
	return r
}

// Pools returns one Pool per cluster, in order.
func (r *RedisClusters) Pools() []pool.Pool { return append([]pool.Pool(nil), r.pools...) }

// Client returns a go-redis cluster client straight to cluster node, for
// reading what it holds; it is closed when the test ends.
func (r *RedisClusters) Client(node int) *redis.ClusterClient { return r.clusters[node].Client(r.tb) }

// Shards returns the number of masters of each cluster.
func (r *RedisClusters) Shards() int { return len(r.clusters[0].Masters) }

// ShardOf returns the index of the shard that serves key on every cluster.
func (r *RedisClusters) ShardOf(key string) int {
	n := r.Shards()
	slot := keyslot.Slot(key)
	for i := n - 1; i > 0; i-- {
		if slot >= i*keyslot.Slots/n {
			return i
		}
	}
	return 0
}

// KillShard stops the master of shard on cluster node at once (SIGKILL):
// that cluster fails the shard's keys, and serves the others.
func (r *RedisClusters) KillShard(node, shard int) { r.clusters[node].Masters[shard].Kill() }

// PauseShard freezes the master of shard on cluster node (SIGSTOP).
func (r *RedisClusters) PauseShard(node, shard int) { r.clusters[node].Masters[shard].Pause() }

// ResumeShard continues a paused master.
func (r *RedisClusters) ResumeShard(node, shard int) { r.clusters[node].Masters[shard].Resume() }

// RestartShard starts a killed master again, empty (no persistence), and
// waits until the cluster serves its slots again. It returns an error rather
// than failing the test, so that a nemesis goroutine may call it.
func (r *RedisClusters) RestartShard(ctx context.Context, node, shard int) error {
	e := &errorTB{TB: r.tb}
	r.clusters[node].Masters[shard].Restart(e)
	if e.err != nil {
		return e.err
	}
	// The master keeps its identity and slots in nodes.conf; it turns
	// writable once the cluster agrees it is back.
	key := r.keyOfShard(shard)
	for {
		err := r.clusters[node].Masters[shard].WriteProbe(ctx, key)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster %d shard %d not serving again: %w (last: %v)", node, shard, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// keyOfShard returns a key served by shard.
func (r *RedisClusters) keyOfShard(shard int) string {
	for i := 0; ; i++ {
		if k := fmt.Sprintf("probe:%d", i); r.ShardOf(k) == shard {
			return k
		}
	}
}

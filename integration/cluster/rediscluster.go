package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
)

// RedisClusters is a set of independent Redis Clusters for one test, each
// of which is one Redlock node made of several masters (shards): containers
// of the local image on the host's network when a Docker engine answers,
// else local redis-server processes (the same choice as Start's, with
// REDLOCK_IT_BACKEND and WithBackend). StartRedisClusters creates it; it is
// removed when the test ends.
//
// There are no proxies: a cluster client connects to the addresses the
// shards announce, which a proxy in front of a seed would not cover. Faults
// are per shard: kill, restart, pause, and on a shard with a replica
// (WithReplicas) a failover (failover.go).
type RedisClusters struct {
	tb      testing.TB
	backend Backend
	pools   []pool.Pool

	mu sync.Mutex // guards the roles below, which a failover swaps
	// shards are the masters, by cluster then shard; replicas the shards'
	// replicas, nil where a shard has none.
	shards, replicas [][]server
}

// StartRedisClusters runs n clusters of masters shards each (slots split
// evenly, in the same way on every cluster, with
// cluster-require-full-coverage no, and cluster-replica-no-failover yes: a
// replica takes over only by TakeOver) and one Pool per cluster, made by
// pool.FromURL from a redis+cluster:// URL. Of opts, WithBackend,
// WithImage and WithReplicas count. It fails tb on error and skips it, outside CI, when
// redis-server is not installed and REDLOCK_SKIP_REDIS is set (processes).
func StartRedisClusters(tb testing.TB, n, masters int, opts ...Option) *RedisClusters {
	tb.Helper()
	cfg, err := newConfig(opts)
	if err != nil {
		tb.Fatal(err)
	}
	r := &RedisClusters{tb: tb, backend: chooseBackend(tb, cfg.backend)}
	switch r.backend {
	case Containers:
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		be, err := newContainerBackend(ctx, tb, cfg.image, false)
		if err != nil {
			tb.Fatalf("cluster: %v", err)
		}
		tb.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := be.close(ctx); err != nil {
				tb.Errorf("cluster: %v", err)
			}
		})
		if r.shards, err = be.startClusterShards(ctx, n, masters); err != nil {
			tb.Fatalf("cluster: start %d clusters of %d containers: %v", n, masters, err)
		}
		if r.replicas, err = be.startReplicas(ctx, r.shards, cfg.replicas); err != nil {
			tb.Fatalf("cluster: start replicas of shards %v: %v", cfg.replicas, err)
		}
	default:
		r.startProcesses(n, masters, cfg.replicas)
	}
	if len(cfg.replicas) > 0 {
		r.awaitMeshes()
	}
	for i := range r.shards {
		addrs := append(r.addrs(i), r.replicaAddrs(i)...)
		p, err := pool.FromURL("redis+cluster://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr="))
		if err != nil {
			tb.Fatalf("cluster: %v", err)
		}
		tb.Cleanup(func() { _ = p.Close() })
		r.pools = append(r.pools, p)
	}
	return r
}

// Backend returns the backend the clusters run on.
func (r *RedisClusters) Backend() Backend { return r.backend }

// startProcesses starts the clusters as redis-server processes, with a
// replica for each of the shards withReplica.
func (r *RedisClusters) startProcesses(n, masters int, withReplica []int) {
	for _, c := range redistest.StartClusters(r.tb, n, masters, redistest.NoPersistence, noFailover...) {
		shards, replicas := make([]server, len(c.Masters)), make([]server, len(c.Masters))
		for j, m := range c.Masters {
			shards[j] = &processServer{tb: r.tb, s: m}
			if !slices.Contains(withReplica, j) {
				continue
			}
			s := redistest.StartClusterNode(r.tb, redistest.NoPersistence, noFailover...)
			ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
			err := redistest.Replicate(ctx, m.Addr(), m.Addr(), redistest.Master{Addr: s.Addr(), Port: s.Port, BusPort: s.BusPort})
			cancel()
			if err != nil {
				r.tb.Fatalf("cluster: replica of shard %d: %v", j, err)
			}
			replicas[j] = &processServer{tb: r.tb, s: s}
		}
		r.shards, r.replicas = append(r.shards, shards), append(r.replicas, replicas)
	}
}

// awaitMeshes waits until every node of each cluster knows every other
// (redistest.AwaitMesh): a replica is met through its master only, and a
// takeover before the others know it can leave them routing its slots to
// the old master.
func (r *RedisClusters) awaitMeshes() {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for i := range r.shards {
		if err := redistest.AwaitMesh(ctx, append(r.addrs(i), r.replicaAddrs(i)...)); err != nil {
			r.tb.Fatalf("cluster %d: %v", i, err)
		}
	}
}

// noFailover keeps every replica from taking over on its own (a paused or
// killed master would otherwise be replaced): only TakeOver promotes. And a
// master sends a replica its full sync at once, not after Redis's default
// 5s wait for more (redistest.ReplicaArgs).
var noFailover = redistest.ReplicaArgs

// addrs returns the masters' addresses of cluster node.
func (r *RedisClusters) addrs(node int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.shards[node]))
	for j, s := range r.shards[node] {
		out[j] = s.addr()
	}
	return out
}

// replicaAddrs returns the replicas' addresses of cluster node.
func (r *RedisClusters) replicaAddrs(node int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.replicas[node] {
		if s != nil {
			out = append(out, s.addr())
		}
	}
	return out
}

// Pools returns one Pool per cluster, in order.
func (r *RedisClusters) Pools() []pool.Pool { return append([]pool.Pool(nil), r.pools...) }

// Client returns a go-redis cluster client straight to cluster node, for
// reading what it holds; it is closed when the test ends.
func (r *RedisClusters) Client(node int) *redis.ClusterClient {
	return redistest.ClusterClient(r.tb, r.addrs(node))
}

// Shards returns the number of masters of each cluster.
func (r *RedisClusters) Shards() int { return len(r.shards[0]) }

// ShardOf returns the index of the shard that serves key on every cluster.
func (r *RedisClusters) ShardOf(key string) int { return ShardOf(key, r.Shards()) }

// ShardOf returns the index of the shard that serves key in a cluster of n
// masters formed by StartRedisClusters.
func ShardOf(key string, n int) int {
	slot := keyslot.Slot(key)
	for i := n - 1; i > 0; i-- {
		if slot >= i*keyslot.Slots/n {
			return i
		}
	}
	return 0
}

// KillShard stops the master of shard on cluster node at once (SIGKILL):
// that cluster fails the shard's keys, and serves the others. Like every
// fault here it returns an error rather than failing the test, so that a
// nemesis goroutine may call it.
func (r *RedisClusters) KillShard(ctx context.Context, node, shard int) error {
	return r.fault(ctx, "kill", node, shard, server.kill)
}

// PauseShard freezes the master of shard on cluster node (SIGSTOP, or the
// engine's pause).
func (r *RedisClusters) PauseShard(ctx context.Context, node, shard int) error {
	return r.fault(ctx, "pause", node, shard, server.pause)
}

// ResumeShard continues a paused master.
func (r *RedisClusters) ResumeShard(ctx context.Context, node, shard int) error {
	return r.fault(ctx, "resume", node, shard, server.unpause)
}

// fault applies f to a shard.
func (r *RedisClusters) fault(ctx context.Context, what string, node, shard int, f func(server, context.Context) error) error {
	s, err := r.master(node, shard)
	if err != nil {
		return fmt.Errorf("cluster: %s: %w", what, err)
	}
	if err := f(s, ctx); err != nil {
		return fmt.Errorf("cluster: %s cluster %d shard %d: %w", what, node, shard, err)
	}
	return nil
}

// RestartShard starts a killed master again, empty (no persistence), and
// waits until the cluster serves its slots again. It returns an error rather
// than failing the test, so that a nemesis goroutine may call it.
func (r *RedisClusters) RestartShard(ctx context.Context, node, shard int) error {
	s, err := r.master(node, shard)
	if err != nil {
		return fmt.Errorf("cluster: restart: %w", err)
	}
	if err := s.start(ctx); err != nil {
		return err
	}
	// The master keeps its identity and slots in nodes.conf; it turns
	// writable once the cluster agrees it is back.
	return r.awaitWritable(ctx, node, shard, s)
}

// awaitWritable waits until s, the master of shard on cluster node, takes
// writes of the shard's keys.
func (r *RedisClusters) awaitWritable(ctx context.Context, node, shard int, s server) error {
	key := r.keyOfShard(shard)
	for {
		err := redistest.WriteProbe(ctx, s.addr(), key)
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

// master returns the master of shard on cluster node now.
func (r *RedisClusters) master(node, shard int) (server, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if node < 0 || node >= len(r.shards) || shard < 0 || shard >= len(r.shards[node]) {
		return nil, fmt.Errorf("no shard %d on cluster %d", shard, node)
	}
	return r.shards[node][shard], nil
}

// keyOfShard returns a key served by shard.
func (r *RedisClusters) keyOfShard(shard int) string {
	for i := 0; ; i++ {
		if k := fmt.Sprintf("probe:%d", i); r.ShardOf(k) == shard {
			return k
		}
	}
}

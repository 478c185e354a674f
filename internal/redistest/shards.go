package redistest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/shardwatch"
)

// markShardsFresh declares each master of a new cluster fresh for the
// lock's shard check (shardwatch.FreshKey: its run never held a lock), so
// that a test's new cluster counts at once. Master i serves form's range i.
func markShardsFresh(ctx context.Context, masters []Master) error {
	n := len(masters)
	for i, m := range masters {
		lo, hi := i*keyslot.Slots/n, (i+1)*keyslot.Slots/n-1
		if err := markShardFresh(ctx, m.Addr, shardwatch.Tag(lo, hi)); err != nil {
			return err
		}
	}
	return nil
}

// markShardFresh sets the fresh-start declaration of tag's shard on the
// master at addr to its run_id.
func markShardFresh(ctx context.Context, addr, tag string) error {
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rc.Close()
	id, err := runID(ctx, rc)
	if err == nil {
		err = rc.Set(ctx, shardwatch.FreshKey(tag), id, 0).Err()
	}
	if err != nil {
		return fmt.Errorf("mark shard %s fresh: %w", addr, err)
	}
	return nil
}

func runID(ctx context.Context, rc *redis.Client) (string, error) {
	info, err := rc.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(info) {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return id, nil
		}
	}
	return "", errors.New("INFO server has no run_id")
}

// ReplicaArgs are the redis-server arguments of every node of a replicated
// cluster: no replica takes over on its own (cluster-replica-no-failover),
// and a master sends a replica its full sync at once, not after Redis's
// default 5s wait for more replicas (repl-diskless-sync-delay 0). A master
// that a failover made a replica syncs with the new one the same way.
var ReplicaArgs = []string{"--cluster-replica-no-failover", "yes", "--repl-diskless-sync-delay", "0"}

// ReplicatedCluster is a Cluster whose every master has one replica.
type ReplicatedCluster struct {
	*Cluster
	Replicas []*Server // Replicas[j] replicates Masters[j] at the start
}

// StartReplicatedClusters runs one cluster per entry of shards, with that
// many masters, each with one replica (cluster-replica-no-failover yes: a
// replica takes over only when a test says so, CLUSTER FAILOVER), and
// returns once every replica is in sync. The masters are declared fresh.
// Every node starts a full sync at once (ReplicaArgs).
func StartReplicatedClusters(t testing.TB, shards ...int) []*ReplicatedCluster {
	t.Helper()
	total := 0
	for _, n := range shards {
		total += 2 * n
	}
	all := startServers(t, total, NoPersistence, true, false, ReplicaArgs...)
	out := make([]*ReplicatedCluster, len(shards))
	for i, n := range shards {
		out[i] = &ReplicatedCluster{Cluster: &Cluster{Masters: all[:n:n]}, Replicas: all[n : 2*n : 2*n]}
		all = all[2*n:]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := inParallel(len(out), func(i int) error {
		c := out[i]
		if err := c.form(ctx); err != nil {
			return fmt.Errorf("form cluster %d: %w", i, err)
		}
		err := inParallel(len(c.Masters), func(j int) error {
			return replicate(ctx, c.Masters[0], c.Masters[j], c.Replicas[j])
		})
		if err != nil {
			return err
		}
		return AwaitMesh(ctx, append(c.Addrs(), addrsOf(c.Replicas)...))
	})
	if err != nil {
		t.Fatalf("replicated clusters %v: %v", shards, err)
	}
	return out
}

// replicate makes r a replica of m, introduced to the cluster through
// seed, and waits until its link is up.
func replicate(ctx context.Context, seed, m, r *Server) error {
	return Replicate(ctx, seed.Addr(), m.Addr(), Master{Addr: r.Addr(), Port: r.Port, BusPort: r.BusPort})
}

// AwaitMesh returns once every node of a cluster (addrs: all of them,
// masters and replicas) knows every other as connected (CLUSTER NODES: a
// line each, none in handshake, none without an address, every link up)
// and sees every slot served (CLUSTER INFO: cluster_state:ok, 16384 slots
// assigned), or ctx's error. A replica met through one master is known to
// the others by gossip only: a takeover before that can leave them routing
// its slots to the old master. And a replica learns its master's slots by
// gossip too: one frozen before that and then told to take over was seen
// as master with cluster_state:fail, its shard served by no node 18s
// after the TAKEOVER (TestRealFailoverQuarantine, about one run in 35).
// The integration harness waits for it too.
func AwaitMesh(ctx context.Context, addrs []string) error {
	var why string // what the last round that ctx did not cut saw
	for {
		gap := ""
		for _, a := range addrs {
			if gap = meshGap(ctx, a, len(addrs)); gap != "" {
				break
			}
		}
		if gap == "" {
			return nil
		}
		if ctx.Err() != nil {
			if why == "" {
				why = gap
			}
			return fmt.Errorf("cluster mesh: %w (last seen: %s)", ctx.Err(), why)
		}
		why = gap
		time.Sleep(20 * time.Millisecond)
	}
}

// meshGap says what the node at addr does not know yet of a cluster of n
// nodes, or "".
func meshGap(ctx context.Context, addr string, n int) string {
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rc.Close()
	out, err := rc.ClusterNodes(ctx).Result()
	if err != nil {
		return fmt.Sprintf("%s: %v", addr, err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != n {
		return fmt.Sprintf("%s knows %d of %d nodes", addr, len(lines), n)
	}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 8 || strings.Contains(f[2], "handshake") || strings.Contains(f[2], "noaddr") || f[7] != "connected" {
			return fmt.Sprintf("%s: %s", addr, l)
		}
	}
	info, err := rc.ClusterInfo(ctx).Result()
	if err != nil {
		return fmt.Sprintf("%s: CLUSTER INFO: %v", addr, err)
	}
	if !seesEverySlotServed(info) {
		f := strings.Fields(info) // cluster_state, cluster_slots_assigned, ... first
		return fmt.Sprintf("%s does not see every slot served: %s", addr, strings.Join(f[:min(2, len(f))], ", "))
	}
	return ""
}

// addrsOf returns the addresses of servers.
func addrsOf(servers []*Server) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.Addr()
	}
	return out
}

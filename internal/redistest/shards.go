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

// ReplicatedCluster is a Cluster whose every master has one replica.
type ReplicatedCluster struct {
	*Cluster
	Replicas []*Server // Replicas[j] replicates Masters[j] at the start
}

// StartReplicatedClusters runs one cluster per entry of shards, with that
// many masters, each with one replica (cluster-replica-no-failover yes: a
// replica takes over only when a test says so, CLUSTER FAILOVER), and
// returns once every replica is in sync. The masters are declared fresh.
func StartReplicatedClusters(t testing.TB, shards ...int) []*ReplicatedCluster {
	t.Helper()
	out := make([]*ReplicatedCluster, len(shards))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i, n := range shards {
		c := StartClusters(t, 1, n, NoPersistence, "--cluster-replica-no-failover", "yes")[0]
		rc := &ReplicatedCluster{Cluster: c}
		for _, m := range c.Masters {
			r := StartClusterNode(t, NoPersistence, m.Extra...)
			if err := replicate(ctx, c.Masters[0], m, r); err != nil {
				t.Fatalf("replicated cluster %d: %v", i, err)
			}
			rc.Replicas = append(rc.Replicas, r)
		}
		out[i] = rc
	}
	return out
}

// replicate makes r a replica of m, introduced to the cluster through
// seed, and waits until its link is up.
func replicate(ctx context.Context, seed, m, r *Server) error {
	return Replicate(ctx, seed.Addr(), m.Addr(), Master{Addr: r.Addr(), Port: r.Port, BusPort: r.BusPort})
}

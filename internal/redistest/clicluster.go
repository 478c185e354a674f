package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// StartCLIClusters runs k Redis Clusters formed the way users form them:
// n masters (at least 3, as redis-cli asks) and replicas replicas per
// master, one redis-server process each, joined by
//
//	redis-cli --cluster create <every node> --cluster-replicas <replicas> --cluster-yes
//
// which picks the masters, splits the slots and sets the config epochs. No
// shard is declared fresh (unlike StartClusters and
// StartReplicatedClusters): the lock's shard check sees the masters as a
// deployment's. extra are more redis-server arguments for every node; with
// replicas, ReplicaArgs are added too. It returns once every node knows
// every other and every replica is in sync, and stops the nodes when t
// ends. Masters are in slot order, Replicas[j] replicates Masters[j] (only
// the first replica of each when replicas > 1), and MasterOf follows the
// split redis-cli made.
func StartCLIClusters(t testing.TB, k, n, replicas int, p Persistence, extra ...string) []*ReplicatedCluster {
	t.Helper()
	cli := CLIBinary(t)
	if replicas > 0 {
		extra = append(slices.Clone(extra), ReplicaArgs...)
	}
	per := n * (1 + replicas)
	all := startServers(t, k*per, p, true, false, extra...)
	nodes := make([][]*Server, k)
	for i := range nodes {
		nodes[i] = all[i*per : (i+1)*per : (i+1)*per]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := make([]*ReplicatedCluster, k)
	err := inParallel(k, func(i int) error {
		rc, err := createWithCLI(ctx, cli, nodes[i], replicas)
		out[i] = rc
		return err
	})
	if err != nil {
		t.Fatalf("redis-cli --cluster create, %d clusters of %d masters with %d replicas each: %v", k, n, replicas, err)
	}
	return out
}

// CLIBinary returns the path of redis-cli, or fails or skips t as Binary
// does when it is missing.
func CLIBinary(t testing.TB) string {
	t.Helper()
	Binary(t) // the same opt-out, and the same failure, when Redis is not installed
	path, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli not installed (%v): this test forms clusters with it; install redis-tools", err)
	}
	return path
}

// createWithCLI joins servers into a cluster with redis-cli --cluster
// create, reads back which node is what, and waits until it is ready.
func createWithCLI(ctx context.Context, cli string, servers []*Server, replicas int) (*ReplicatedCluster, error) {
	args := []string{"--cluster", "create"}
	for _, s := range servers {
		args = append(args, s.Addr())
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redis-cli %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	// Every node learns the others' roles by gossip: the first one's view
	// may still show a replica as a master without slots.
	var rc *ReplicatedCluster
	var err error
	for ctx.Err() == nil {
		if rc, err = readLayout(ctx, servers, replicas > 0); err == nil {
			if err = notReady(ctx, mastersOf(rc)); err == nil {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rc == nil && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("not ready, last seen: %w", err)
	}
	if err := AwaitMesh(ctx, addrsOf(servers)); err != nil {
		return nil, err
	}
	for _, r := range rc.Replicas {
		if err := AwaitReplicaLink(ctx, r.Addr()); err != nil {
			return nil, err
		}
	}
	return rc, nil
}

// mastersOf returns the Masters of rc, as FormCluster's helpers take them.
func mastersOf(rc *ReplicatedCluster) []Master {
	out := make([]Master, len(rc.Masters))
	for i, m := range rc.Masters {
		out[i] = Master{Addr: m.Addr(), Port: m.Port, BusPort: m.BusPort}
	}
	return out
}

// readLayout reads CLUSTER NODES on the first server and returns the
// masters in slot order, the first replica of each (an error while a
// master has none and withReplicas is set), and the slot ranges.
func readLayout(ctx context.Context, servers []*Server, withReplicas bool) (*ReplicatedCluster, error) {
	rcl := redis.NewClient(&redis.Options{Addr: servers[0].Addr(), MaxRetries: -1})
	defer rcl.Close()
	text, err := rcl.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, err
	}
	byPort := map[int]*Server{}
	for _, s := range servers {
		byPort[s.Port] = s
	}
	type master struct {
		s      *Server
		lo, hi int
	}
	var ms []master
	replicaOf := map[string]*Server{} // master id: its first replica
	ids := map[string]*Server{}
	for line := range strings.Lines(strings.TrimSpace(text)) {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("CLUSTER NODES line %q", line)
		}
		hostPort, _, _ := strings.Cut(f[1], "@")
		_, portText, _ := strings.Cut(hostPort, ":")
		port, _ := strconv.Atoi(portText)
		s := byPort[port]
		if s == nil {
			return nil, fmt.Errorf("CLUSTER NODES names %s, not one of ours", f[1])
		}
		ids[f[0]] = s
		switch {
		case strings.Contains(f[2], "master") && len(f) > 8:
			lo, hi, _ := strings.Cut(f[8], "-")
			m := master{s: s}
			m.lo, _ = strconv.Atoi(lo)
			m.hi, _ = strconv.Atoi(hi)
			if len(f) > 9 || hi == "" {
				return nil, fmt.Errorf("master %s serves %v: want one range", f[1], f[8:])
			}
			ms = append(ms, m)
		case strings.Contains(f[2], "slave") && replicaOf[f[3]] == nil:
			replicaOf[f[3]] = s
		}
	}
	slices.SortFunc(ms, func(a, b master) int { return a.lo - b.lo })
	rc := &ReplicatedCluster{Cluster: &Cluster{}}
	for _, m := range ms {
		rc.Masters = append(rc.Masters, m.s)
		rc.ranges = append(rc.ranges, [2]int{m.lo, m.hi})
	}
	for id, r := range replicaOf {
		j := slices.Index(rc.Masters, ids[id])
		if j < 0 {
			return nil, fmt.Errorf("replica %s of %s, not a master with slots", r.Addr(), id)
		}
		if rc.Replicas == nil {
			rc.Replicas = make([]*Server, len(rc.Masters))
		}
		rc.Replicas[j] = r
	}
	if withReplicas && (rc.Replicas == nil || slices.Contains(rc.Replicas, nil)) {
		return nil, fmt.Errorf("not every master has a replica yet:\n%s", text)
	}
	return rc, nil
}

package redistest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/internal/keyslot"
)

// Cluster is a Redis Cluster of masters without replicas, one redis-server
// process each, on loopback: one Redlock node made of several shards. It is
// configured with cluster-require-full-coverage no, so that a dead master
// fails only its own slots.
type Cluster struct {
	Masters []*Server
	ranges  [][2]int // the slots of each master, when redis-cli split them (StartCLIClusters)
}

// StartCluster runs a cluster of n masters, the 16384 slots split evenly
// between them in order, waits until every master reports cluster_state:ok
// and knows every other, and stops it when t ends.
func StartCluster(t testing.TB, n int, p Persistence) *Cluster {
	t.Helper()
	return StartClusters(t, 1, n, p)[0]
}

// StartClusters runs k clusters of n masters as StartCluster does, formed in
// parallel; extra are more redis-server arguments for every master.
func StartClusters(t testing.TB, k, n int, p Persistence, extra ...string) []*Cluster {
	t.Helper()
	if k < 1 || n < 1 {
		t.Fatalf("StartClusters: %d clusters of %d masters", k, n)
	}
	all := startServers(t, k*n, p, true, false, extra...)
	clusters := make([]*Cluster, k)
	for i := range clusters {
		clusters[i] = &Cluster{Masters: all[i*n : (i+1)*n : (i+1)*n]}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := inParallel(k, func(i int) error { return clusters[i].form(ctx) }); err != nil {
		t.Fatalf("form %d clusters of %d masters: %v", k, n, err)
	}
	return clusters
}

// inParallel runs op(0) to op(n-1) at once and joins their errors.
func inParallel(n int, op func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = op(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// form assigns the slots, introduces the masters to the first and waits for
// the cluster to be ready.
func (c *Cluster) form(ctx context.Context) error {
	masters := make([]Master, len(c.Masters))
	for i, s := range c.Masters {
		masters[i] = Master{Addr: s.Addr(), Port: s.Port, BusPort: s.BusPort}
	}
	return FormCluster(ctx, masters)
}

// Master is a cluster-enabled redis-server on 127.0.0.1 that FormCluster
// joins into a cluster: its address, port and cluster bus port.
type Master struct {
	Addr          string
	Port, BusPort int
}

// FormCluster makes a cluster of masters that know no other node: the
// 16384 slots split evenly between them in order, every master introduced
// to every other (a full mesh: no wait for gossip). It returns once every
// master reports cluster_state:ok and knows every other, each master
// declared fresh for the lock's shard check (its run never held a lock),
// or ctx's error. The integration harness forms its container clusters with it.
func FormCluster(ctx context.Context, masters []Master) error {
	n := len(masters)
	for i, m := range masters {
		lo, hi := i*keyslot.Slots/n, (i+1)*keyslot.Slots/n-1
		if err := do(ctx, m.Addr, "CLUSTER", "ADDSLOTSRANGE", lo, hi); err != nil {
			return err
		}
		for _, o := range masters[:i] {
			if err := do(ctx, o.Addr, "CLUSTER", "MEET", "127.0.0.1", m.Port, m.BusPort); err != nil {
				return err
			}
		}
	}
	var why error
	met := time.Now()
	for ctx.Err() == nil {
		if why = notReady(ctx, masters); why == nil {
			return markShardsFresh(ctx, masters)
		}
		// Redis drops a MEET whose handshake did not finish within the
		// node timeout (1s at least) and never sends it again: a cluster
		// of the CLI's tests stayed two clusters of one master each for
		// its whole 30s start, in a make test beside two CPU hogs (each
		// master had received the other's MEET, and knew only itself).
		// The MEETs still missing are sent again once a second.
		if time.Since(met) >= time.Second {
			meetAgain(ctx, masters)
			met = time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("not ready: %w (last seen: %v)", ctx.Err(), why)
}

// meetAgain introduces to each other, once more, every two masters of which
// one does not list the other in CLUSTER NODES (its ":port@busport"). A MEET
// to a node known already, or in handshake, is answered OK and changes
// nothing; errors are left to the readiness check to report.
func meetAgain(ctx context.Context, masters []Master) {
	for i, m := range masters {
		rc := redis.NewClient(&redis.Options{Addr: m.Addr, MaxRetries: -1})
		nodes, err := rc.ClusterNodes(ctx).Result()
		_ = rc.Close()
		if err != nil {
			continue
		}
		for j, o := range masters {
			if j != i && !strings.Contains(nodes, fmt.Sprintf(":%d@%d", o.Port, o.BusPort)) {
				_ = do(ctx, m.Addr, "CLUSTER", "MEET", "127.0.0.1", o.Port, o.BusPort)
			}
		}
	}
}

// notReady returns nil when every master says the cluster is ok, knows all
// the masters and who serves each of the 16384 slots, else what the first
// master that does not said. (A master reports cluster_state:ok, and lists
// its peers, before gossip told it their slots: a cluster client that
// loaded its slot map from it sent a key to the wrong master, which
// answered MOVED, in 1 of 4 quiet runs of the redlock package.)
func notReady(ctx context.Context, masters []Master) error {
	for _, m := range masters {
		rc := redis.NewClient(&redis.Options{Addr: m.Addr, MaxRetries: -1})
		info, err := rc.ClusterInfo(ctx).Result()
		nodes, err2 := rc.ClusterNodes(ctx).Result()
		_ = rc.Close()
		switch {
		case err != nil || err2 != nil:
			return fmt.Errorf("%s: %w", m.Addr, errors.Join(err, err2))
		case !seesEverySlotServed(info) || strings.Count(nodes, "master") < len(masters):
			return fmt.Errorf("%s: cluster_state not ok, or not every master or slot known; CLUSTER INFO:\n%s\nCLUSTER NODES:\n%s", m.Addr, info, nodes)
		}
	}
	return nil
}

// seesEverySlotServed reports whether info, a node's answer to CLUSTER
// INFO, says that it sees the cluster up with every slot assigned.
func seesEverySlotServed(info string) bool {
	return strings.Contains(info, "cluster_state:ok") &&
		strings.Contains(info, fmt.Sprintf("cluster_slots_assigned:%d\r\n", keyslot.Slots))
}

// do runs one command at addr with a client of its own.
func do(ctx context.Context, addr string, args ...any) error {
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rc.Close()
	if err := rc.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("%s on %s: %w", args[:2], addr, err)
	}
	return nil
}

// Addrs returns the masters' addresses, the seeds of a cluster client.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Masters))
	for i, s := range c.Masters {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Client returns a go-redis cluster client for the cluster, closed when t
// ends. It honours context deadlines and does not retry on its own.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient { return ClusterClient(t, c.Addrs()) }

// ClusterClient is Cluster.Client for the cluster whose masters are at
// addrs.
func ClusterClient(t testing.TB, addrs []string) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: addrs, ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
	})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// MasterOf returns the master that serves key's slot, in the split
// StartCluster (or redis-cli, StartCLIClusters) made: no resharding
// happens in tests.
func (c *Cluster) MasterOf(key string) *Server {
	n, slot := len(c.Masters), keyslot.Slot(key)
	for i, r := range c.ranges {
		if slot >= r[0] && slot <= r[1] {
			return c.Masters[i]
		}
	}
	for i := n - 1; i > 0; i-- {
		if slot >= i*keyslot.Slots/n { // form's ranges
			return c.Masters[i]
		}
	}
	return c.Masters[0]
}

// WriteProbe writes key on s (a cluster master) with a client of its own, which
// succeeds once s serves key's slot as a writable master.
func (s *Server) WriteProbe(ctx context.Context, key string) error {
	return WriteProbe(ctx, s.Addr(), key)
}

// WriteProbe is Server.WriteProbe for the master at addr.
func WriteProbe(ctx context.Context, addr, key string) error {
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	defer rc.Close()
	return rc.Set(ctx, key, "1", time.Second).Err()
}

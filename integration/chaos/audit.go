package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/internal/redistest"
)

// auditTimeout bounds the end-of-run audit of every lock node.
const auditTimeout = time.Minute

// auditTTLs scans every lock node after the run (nodes is startNodes'
// *cluster.Cluster or *cluster.RedisClusters; every shard master of a
// Redis Cluster) and returns, as "node i: key", the keys without a TTL
// beyond the ones the library keeps so on purpose (keyspace.Lasting:
// fence counters, fresh-start declarations). Every other key the library
// writes has one, on every path the run took: waits cut by faults and
// contexts, clients killed mid-wait, every kind. An error is a node that
// could not be read.
func auditTTLs(nodes any) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), auditTimeout)
	defer cancel()
	var (
		mu  sync.Mutex
		out []string
	)
	scan := func(node int, rc *redis.Client) error {
		keys, err := redistest.Untimed(ctx, rc)
		if err != nil {
			return fmt.Errorf("chaos: audit of node %d (%s): %w", node, rc.Options().Addr, err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			out = append(out, fmt.Sprintf("node %d: %s", node, k))
		}
		return nil
	}
	switch c := nodes.(type) {
	case *cluster.Cluster:
		for _, n := range c.Nodes() {
			if err := scan(n.Index(), n.Client()); err != nil {
				return out, err
			}
		}
	case *cluster.RedisClusters:
		for i := range c.Pools() {
			err := c.Client(i).ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return scan(i, m) })
			if err != nil {
				return out, err
			}
		}
	default:
		return nil, fmt.Errorf("chaos: audit: unknown nodes %T", nodes)
	}
	return out, nil
}

// untimedKeys returns the keys of auditTTLs' lines, without their node.
func untimedKeys(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		_, k, _ := strings.Cut(l, ": ")
		out[i] = k
	}
	return out
}

package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ShardIdentifier is implemented by a Pool of a Redis Cluster that can
// tell the identity of the master serving a key's slot (run_id, uptime,
// persistence, as an Identifier tells its one server's; no fresh-start
// key: a shard's declaration is read by the lock's shard check). The
// go-redis adapter over a *redis.ClusterClient implements it (FromURL,
// FromURLs and New). A Pool that wraps another should forward it.
type ShardIdentifier interface {
	// ShardIdentity returns the identity of the server run runID (INFO
	// server's run_id), the master the Pool routes key to. The first call
	// for a run reads INFO server, CONFIG GET appendonly and CONFIG GET
	// appendfsync from that master in one round trip, bounded by ctx; the
	// answer is kept for the run (a restart draws a new run_id), so later
	// calls do no I/O. It fails when the read fails, or when the master it
	// reached is another run (the slot moved, or the master restarted): an
	// identity is only ever that of runID. CONFIG refused leaves the
	// persistence unknown (Identity.Err says why), which is no error.
	ShardIdentity(ctx context.Context, key, runID string) (Identity, error)
}

// runCells keeps the identities a cluster Pool read, by run_id. A
// persistence changed at run time (CONFIG SET) is not seen for a run
// already read.
type runCells struct {
	mu    sync.Mutex
	byRun map[string]Identity
}

// maxRuns bounds runCells: each restart or failover of a shard adds a run;
// past the bound the cells start over, and the next calls read again.
const maxRuns = 256

func (c *runCells) get(runID string) (Identity, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.byRun[runID]
	return id, ok
}

func (c *runCells) put(id Identity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byRun == nil || len(c.byRun) >= maxRuns {
		c.byRun = map[string]Identity{}
	}
	c.byRun[id.RunID] = id
}

// errNotCluster is ShardIdentity's error on a Pool that is not a cluster.
var errNotCluster = errors.New("pool: not a Redis Cluster")

// ShardIdentity implements ShardIdentifier.
func (g *goRedis) ShardIdentity(ctx context.Context, key, runID string) (Identity, error) {
	cc, ok := g.client.(*redis.ClusterClient)
	if !ok || g.runs == nil {
		return Identity{}, errNotCluster
	}
	if runID == "" {
		return Identity{}, errors.New("pool: no run_id")
	}
	if id, ok := g.runs.get(runID); ok {
		return id, nil
	}
	read := func(ctx context.Context) (Identity, error) {
		m, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return Identity{}, err
		}
		return readIdentity(ctx, m, false)
	}
	var id Identity
	var err error
	if g.ctxDeadlines {
		id, err = read(ctx)
	} else {
		id, err = bounded(ctx, read)
	}
	switch {
	case err != nil:
		return Identity{}, deadlineErr(ctx, err)
	case id.RunID != runID:
		return Identity{}, fmt.Errorf("pool: the master of %q is run %q, not %s", key, id.RunID, runID)
	}
	g.runs.put(id)
	return id, nil
}

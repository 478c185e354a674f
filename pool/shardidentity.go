package pool

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ShardIdentifier is implemented by a Pool of a Redis Cluster that learns
// the identity of each server of the cluster (masters and replicas) each
// time it opens a connection to it, as an Identifier does for its one
// server: run_id, uptime and persistence, without the fresh-start key (a
// shard's declaration is read by the lock's shard check). Pools made by
// FromURL and FromURLs from a cluster URL implement it; a Pool made by New
// over a *redis.ClusterClient of yours does not (the adapter does not see
// its connections open). A Pool that wraps another should forward it.
type ShardIdentifier interface {
	// ShardIdentity returns what the pool learned of the server run named
	// runID (INFO server's run_id) at its latest connection to that run's
	// address, and false when the latest connection to every address was
	// to another run, or none was made. A command answered on a connection
	// to that run was answered under what Identity says, since a restart
	// draws a new run_id and breaks the connections.
	ShardIdentity(runID string) (Identity, bool)
}

// shardCells keeps the latest Identity of each server of a cluster, by
// address: as many entries as servers the cluster client connected to.
type shardCells struct {
	mu     sync.Mutex
	byAddr map[string]Identity
}

// onConnect returns the go-redis OnConnect hook of the shard client of
// addr: it reads the server's identity (readIdentity, without the
// fresh-start key) and keeps it as addr's latest.
func (s *shardCells) onConnect(addr string) func(context.Context, *redis.Conn) error {
	return func(ctx context.Context, cn *redis.Conn) error {
		id, err := readIdentity(ctx, cn, false)
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.byAddr[addr] = id
		s.mu.Unlock()
		return nil
	}
}

// identity implements ShardIdentifier.
func (s *shardCells) identity(runID string) (Identity, bool) {
	if runID == "" {
		return Identity{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range s.byAddr {
		if id.RunID == runID {
			return id, true
		}
	}
	return Identity{}, false
}

// newIdentifiedCluster returns an owned go-redis Pool of the cluster of
// copts whose every shard client learns its server's identity at every new
// connection. copts is left unchanged.
func newIdentifiedCluster(copts *redis.ClusterOptions) *goRedis {
	cells := &shardCells{byAddr: map[string]Identity{}}
	o := *copts
	next := o.NewClient
	if next == nil {
		next = redis.NewClient
	}
	o.NewClient = func(ro *redis.Options) *redis.Client {
		ro.OnConnect = cells.onConnect(ro.Addr)
		return next(ro)
	}
	g := newGoRedis(redis.NewClusterClient(&o), true)
	g.shards = cells
	return g
}

// ShardIdentity implements ShardIdentifier: false on a Pool that is not a
// cluster Pool made by FromURL or FromURLs.
func (g *goRedis) ShardIdentity(runID string) (Identity, bool) {
	if g.shards == nil {
		return Identity{}, false
	}
	return g.shards.identity(runID)
}

package node

import (
	"context"
	"fmt"
	"time"

	"github.com/redlockgo/redlock/internal/shardwatch"
	"github.com/redlockgo/redlock/pool"
)

// Amnesia by failover on Redis Cluster nodes. A node that is a Redis
// Cluster answers each key from the master of the key's shard; when that
// master is a replica promoted less than the quarantine ago (a forced
// failover, or its master died), it may lack a lock key that was still
// valid, and a second holder could build a majority with it. The same
// holds for a shard master that restarted without its data, and for one
// that took over before it restarted (Redis forgets the promotion at a
// restart; the shard's marker remembers it). The restart
// quarantine's identity (pool.Identifier) is per connection, and a
// promotion breaks no connection, so a cluster node is judged per key:
// after its yes, the shard check reads the reign of the master that serves
// the key's slot (internal/shardwatch: one script, bounded by the vote's
// own deadline) and refuses the yes while that reign is younger than the
// quarantine. Other shards of the same cluster are judged by their own
// reigns, so their keys are not affected.

// shardCheck is the failover quarantine of one node that is a Redis
// Cluster, chosen by New when the quarantine is on.
type shardCheck struct {
	p    pool.Pool
	set  *Set
	last lastReport // by reign (run and replication id)
}

// check returns an error wrapping ErrQuarantined when the master serving
// key's slot took over, or restarted without persisting every write, less
// than the quarantine ago (shardwatch.Reign.Left), a read error when its
// reign cannot be read (the yes is then not known to count), and nil when
// it counts. ctx bounds the reads. It reports the first time a reign is
// found quarantined.
func (sc *shardCheck) check(ctx context.Context, i int, key string) error {
	q := sc.set.cfg.Quarantine
	r, err := shardwatch.Read(ctx, sc.p, key, markerKeep(q))
	if err != nil {
		return fmt.Errorf("reading the reign of the shard of %q: %w", key, err)
	}
	left := r.Left(q, false)
	if left == 0 {
		return nil
	}
	persistence := ""
	if r.Left(q, true) == 0 { // only a restart keeps it out: does its run persist?
		p, why := sc.persistence(ctx, key, r.RunID)
		if p == pool.PersistenceAlways {
			return nil
		}
		persistence = fmt.Sprintf(", persistence %s%s", p, why)
	}
	how := "restarted"
	switch {
	case r.Promoted:
		how = "took over (a failover)"
	case r.TookOver:
		how = fmt.Sprintf("took over before its run (a failover first seen %v ago)", r.Taken.Truncate(time.Second))
	}
	err = fmt.Errorf("%w: the master serving %q %s; run %s, replication id %s%s, seen for %v; counts in %v",
		ErrQuarantined, key, how, r.RunID, r.ReplID, persistence, r.Age().Truncate(time.Second), left.Truncate(time.Millisecond))
	sc.last.report(ctx, sc.set, i, Quarantined, r.RunID+"/"+r.ReplID, err)
	return err
}

// persistence returns the persistence of the server run runID, the master
// of key's slot, as the Pool tells it (pool.ShardIdentifier: one round
// trip, bounded by ctx, the first time for a run), and
// PersistenceUnknown with the reason when it cannot tell: a Pool that is
// not a ShardIdentifier, a failed read, CONFIG refused.
func (sc *shardCheck) persistence(ctx context.Context, key, runID string) (pool.Persistence, string) {
	si, ok := sc.p.(pool.ShardIdentifier)
	if !ok {
		return pool.PersistenceUnknown, " (the pool does not tell)"
	}
	id, err := si.ShardIdentity(ctx, key, runID)
	switch {
	case err != nil:
		return pool.PersistenceUnknown, fmt.Sprintf(" (%v)", err)
	case id.Persistence == pool.PersistenceUnknown:
		return pool.PersistenceUnknown, fmt.Sprintf(" (%v)", id.Err)
	}
	return id.Persistence, ""
}

// markerKeep is how long a shard's reign marker outlives its last read
// under quarantine q: longer than the quarantine, so that a reign in use
// keeps its first sight, and at least a day.
func markerKeep(q time.Duration) time.Duration { return max(2*q, 24*time.Hour) }

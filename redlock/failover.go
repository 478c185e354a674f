package redlock

import (
	"context"
	"fmt"
	"time"

	"github.com/redlockgo/redlock/internal/shardwatch"
)

// Amnesia by failover on Redis Cluster nodes. A node that is a Redis
// Cluster answers each key from the master of the key's shard; when that
// master is a replica promoted less than the quarantine ago (a forced
// failover, or its master died), it may lack a lock key that was still
// valid, and a second holder could build a majority with it. The same
// holds for a shard master that restarted without its data. The restart
// quarantine's identity (pool.Identifier) is per connection, and a
// promotion breaks no connection, so a cluster node is judged per key:
// after its yes, health reads the reign of the master that serves the
// key's slot (internal/shardwatch: one script, bounded by the vote's own
// deadline) and refuses the yes while that reign is younger than the
// quarantine. Other shards of the same cluster are judged by their own
// reigns, so their keys are not affected.

// markerKeep is how long a shard's reign marker outlives its last read:
// longer than the quarantine, so that a reign in use keeps its first
// sight, and at least a day.
func (c *Client) markerKeep() time.Duration { return max(2*c.quarantine, 24*time.Hour) }

// shardQuarantined returns an error wrapping ErrNodeQuarantined when node
// i is a Redis Cluster whose master for key's slot took over or restarted
// less than the quarantine ago, a read error when its reign cannot be
// read (the yes is then not known to count), and nil when it counts or is
// no cluster. ctx bounds the read.
func (c *Client) shardQuarantined(ctx context.Context, i int, key string) error {
	if c.quarantine == 0 || !c.cluster[i] {
		return nil
	}
	r, err := shardwatch.Read(ctx, c.pools[i], key, c.markerKeep())
	if err != nil {
		return fmt.Errorf("reading the reign of the shard of %q: %w", key, err)
	}
	left := r.Left(c.quarantine)
	if left == 0 {
		return nil
	}
	how := "restarted"
	if r.Promoted {
		how = "took over (a failover)"
	}
	err = fmt.Errorf("%w: the master serving %q %s; run %s, replication id %s, seen for %v; counts in %v",
		ErrNodeQuarantined, key, how, r.RunID, r.ReplID, r.Age().Truncate(time.Second), left.Truncate(time.Millisecond))
	c.note(ctx, i, NodeQuarantined, r.RunID+"/"+r.ReplID, err)
	return err
}

// judgeFor returns decide's judge for a decision on key: the bound one
// when no node is a cluster under the quarantine, else one that also
// judges the shard of key (health).
func (c *Client) judgeFor(key string) func(context.Context, int, bool, error) (bool, error) {
	if !c.shardsJudged() {
		return c.judge
	}
	return func(ctx context.Context, i int, ok bool, err error) (bool, error) {
		c.silence.note(i, err)
		return c.vote(ctx, i, key, ok, err)
	}
}

// shardsJudged reports whether some node is a cluster whose shards health
// judges.
func (c *Client) shardsJudged() bool {
	if c.quarantine == 0 {
		return false
	}
	for _, cl := range c.cluster {
		if cl {
			return true
		}
	}
	return false
}

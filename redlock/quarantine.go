package redlock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redlockgo/redlock/pool"
)

// DefaultQuarantine is the quarantine of a Client with the default drift
// factor: MaxTTL plus its drift allowance. A node that restarted without
// its data may have forgotten a lock granted just before; that lock's
// validity ends at most its TTL (plus the drift the holder allows for the
// node's clock) after it was granted. Waiting the longest TTL any client
// may ask for covers every lock, whatever the clients; a deployment whose
// clients use shorter TTLs states its own bound with WithQuarantine.
const DefaultQuarantine = MaxTTL + time.Duration(float64(MaxTTL)*DefaultDriftFactor) + driftConstant

// WithQuarantine sets how long a node that restarted without persisting
// every write stays out of the majority: its yes does not count toward an
// acquisition of any kind (TryLock and Lock, readers, permits, multi-locks,
// a waiter's grant), an extension or a fence until its uptime reaches d. The
// default is MaxTTL plus its drift allowance (DefaultQuarantine with the
// default drift factor); set d to the longest TTL any client of these nodes
// uses, plus its drift allowance. 0 disables the check.
//
// The check needs pools that tell their node's identity (pool.Identifier:
// FromURL and FromURLs do). A node counts at once when it persists every
// write (appendonly yes, appendfsync always), or when it carries the
// fresh-start declaration (pool.FreshStartKey) for its current run. A node
// whose uptime cannot be read (INFO hidden) counts, and is reported once
// per run (a NodeUnverified event); one whose persistence cannot be read
// (CONFIG hidden) is treated as not persisting every write. A Pool that is
// not a pool.Identifier (pool.New over a client of yours, a wrapper) is
// outside the check: its nodes count.
//
// A node that is a Redis Cluster (pool.Cluster) is judged per key, by the
// master that serves the key's slot: after its yes, one script on that
// master (bounded by the vote's deadline) reads its run and replication
// id, and the yes does not count while that master restarted less than d
// ago (uptime; the shard's fresh-start declaration, shardwatch.FreshKey,
// spares a new run) or took over from its master (a failover: a replica
// promoted before it received the key). Redis does not say when a promotion
// happened, so a promoted master is quarantined from its first sight: the
// first script to see its reign records the time on the master itself
// (redlock:reign{n}), and every Client, including one created later, counts
// d from there. Persistence spares no promoted master. Keys of the
// cluster's other shards are not affected. The cost: one more round trip
// per yes of a cluster node, and a promoted shard counts for nobody for d
// after it is first seen, which with the default is a day; state the
// longest TTL with d.
func WithQuarantine(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.fail("quarantine must not be negative, got %v", d)
			return
		}
		c.quarantine = &d
	}
}

// quarantineFor is the quarantine of a Client: the option's, or MaxTTL and
// its drift allowance under the Client's drift factor.
func quarantineFor(cfg config) time.Duration {
	if cfg.quarantine != nil {
		return *cfg.quarantine
	}
	return MaxTTL + driftOf(cfg.driftFactor, MaxTTL)
}

// trust is what a Client last reported about each node, so that each state
// of each server run is reported once.
type trust struct {
	mu       sync.Mutex
	reported []trustNote
}

type trustNote struct {
	kind  EventKind
	runID string
}

// startClockCheck starts the clock readings of WithClockCheck; Close stops
// them. A node out for a clock fault stays out for the quarantine, or
// MaxTTL and its drift when the quarantine is off.
func (c *Client) startClockCheck() {
	if c.cfg.clockEvery == 0 {
		return
	}
	hold := c.quarantine
	if hold == 0 {
		hold = MaxTTL + c.drift(MaxTTL)
	}
	c.clocks = newClockWatch(len(c.pools), c.cfg.driftFactor, hold)
	c.clocks.running.Add(1)
	go c.watchClocks()
}

// quarantined returns an error wrapping ErrNodeQuarantined when node i may
// have lost its data less than the quarantine ago, and nil when it counts.
// It reports the first time a server run is found quarantined or
// unverifiable.
func (c *Client) quarantined(ctx context.Context, i int) error {
	if c.quarantine == 0 {
		return nil
	}
	idr, ok := c.pools[i].(pool.Identifier)
	if !ok {
		return nil // documented on WithQuarantine: outside the check
	}
	id, ok := idr.Identity()
	switch {
	case !ok:
		return nil // a Pool that answered without connecting: nothing to learn
	case id.Started.IsZero():
		c.note(ctx, i, NodeUnverified, id.RunID, fmt.Errorf("%w: uptime unknown: %w", ErrNodeUnverified, id.Err))
		return nil
	case id.Persistence == pool.PersistenceAlways || id.FreshStart:
		return nil
	}
	age := c.cfg.clock.Now().Sub(id.Started)
	if age >= c.quarantine {
		return nil
	}
	err := fmt.Errorf("%w: run %s started %v ago, persistence %s; counts in %v",
		ErrNodeQuarantined, id.RunID, age.Truncate(time.Second), id.Persistence, (c.quarantine - age).Truncate(time.Second))
	c.note(ctx, i, NodeQuarantined, id.RunID, err)
	return err
}

// note reports kind for node i's run runID, unless already reported.
func (c *Client) note(ctx context.Context, i int, kind EventKind, runID string, err error) {
	c.trust.mu.Lock()
	if c.trust.reported == nil {
		c.trust.reported = make([]trustNote, len(c.pools))
	}
	n := trustNote{kind: kind, runID: runID}
	seen := c.trust.reported[i] == n
	c.trust.reported[i] = n
	c.trust.mu.Unlock()
	if !seen {
		c.emit(ctx, Event{Kind: kind, Err: &NodeError{Node: i, Addr: c.pools[i].Addr(), Err: err}})
	}
}

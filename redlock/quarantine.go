package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/redlockgo/redlock/internal/node"
)

// DefaultQuarantine is the quarantine of a Client with the default drift
// factor and max TTL: DefaultMaxTTL plus its drift allowance, about 60.6s.
// A node that restarted without its data may have forgotten a lock
// granted just before; that lock's validity ends at most its TTL (plus the
// drift the holder allows for the node's clock) after it was granted.
// Waiting the longest TTL any client may ask for (WithMaxTTL, recorded on
// the nodes) covers every lock, whatever the clients.
const DefaultQuarantine = DefaultMaxTTL + time.Duration(float64(DefaultMaxTTL)*DefaultDriftFactor) + driftConstant

// WithQuarantine sets how long a node that restarted without persisting
// every write stays out of the majority: its yes does not count toward an
// acquisition of any kind (TryLock and Lock, readers, permits, multi-locks,
// a waiter's grant), an extension or a fence until its uptime reaches d. The
// default is the Client's max TTL plus its drift allowance (WithMaxTTL;
// DefaultQuarantine with the defaults), lengthened to a larger max TTL
// recorded on the nodes by another Client and its drift. A d shorter than
// the max TTL is the caller's statement that no lock on these nodes lives
// longer. 0 disables the check.
//
// A node that restarted alone counts again sooner: once its uptime passes
// the longest lease its peers may share with it (the largest lease ceiling
// a quorum of the other nodes report, each counting itself, plus the drift
// allowance), every lock it could have forgotten has expired. The Client
// that finds a node quarantined establishes this in the background,
// declares the node's run fresh on it, and reports a NodeReturned event;
// every Client then counts the node. (A Client whose Pool connected to the
// node before the declaration reads it in the background at its first
// vote that finds the node out, one round trip: that vote does not count
// the node, the next ones do.) A majority restarted together, or a
// node whose peers cannot be read, sits out the whole quarantine
// (docs/safety.md, "A restarted node's return").
//
// The check applies to every standalone node, whatever its Pool. A Pool
// that tells its server's identity (pool.Identifier: pool.FromURL,
// pool.FromURLs, rueidispool.FromURL, pool.New over a *redis.Client) is
// judged on what it learned at its latest connection; any other, or one
// that does not tell it now, is called through scripts that read the
// server's run, uptime and fresh-start declaration in the same round trip
// as the vote, so that every answer arrives with the run that gave it.
// Scripts cannot read CONFIG: such a node is taken not to persist every
// write. A node counts at once when it persists every write (appendonly
// yes, appendfsync always), or when it carries the fresh-start declaration
// (pool.FreshStartKey) for its current run. A node whose uptime cannot be
// read (INFO hidden) counts, and is reported once per run (a NodeUnverified
// event, NodeStatus.Unverified); one whose persistence cannot be read
// (CONFIG hidden) is treated as not persisting every write.
//
// A node that is a Redis Cluster (pool.Cluster) is judged per key, by the
// master that serves the key's slot: after its yes, one script on that
// master (bounded by the vote's deadline) reads its run, replication id,
// cluster node id and config epoch, and the shard's marker
// (redlock:reign{n}, n the first of 0, 1, 2, ... whose slot the master
// serves). The yes does not count while that master
//
//   - took over from another (a failover: a replica promoted before it
//     received the key) less than d ago. Redis does not say when a
//     promotion happened, and forgets it at a restart, so a takeover is
//     timed from its first sight, recorded on the master itself in the
//     marker: every Client, including one created later, counts d from
//     there, and the marker survives the master's restarts when it
//     persists every write. A takeover is known from this run
//     (second_repl_offset set), or from the marker: one that names another
//     node (the master's data came from it by replication), or this node
//     under another config epoch (a promotion draws a new epoch), or a
//     takeover recorded before. Neither persistence nor a declaration
//     spares it: the master never received the keys;
//   - or, never having taken over, restarted less than d ago (uptime)
//     without persisting every write (appendonly yes and appendfsync
//     always, as CONFIG GET says on that run, read once per run by the
//     Pool, pool.ShardIdentifier, only when this alone keeps the master
//     out; unknown counts as not persisting) and without
//     the shard's fresh-start declaration (redlock:fresh-start{n} set to
//     the master's run_id).
//
// So a cluster formed with redis-cli --cluster create whose masters
// persist every write counts at once, and after their restarts too; a
// promoted shard counts for nobody for d after it is first seen, which
// with the default is about a minute. Keys of the cluster's other shards are not
// affected. Not seen: a replica that never received the shard's marker (it
// lagged from before the shard's first use, or from before a marker unread
// for max(2d, 24h) expired), promoted, never seen promoted by any Client,
// then restarted, looks like a new shard (docs/safety.md). The cost: one
// more round trip per yes of a cluster node; state the longest TTL with d.
func WithQuarantine(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.fail("quarantine must not be negative, got %v", d)
			return
		}
		c.quarantine = &d
	}
}

// quarantineFor is the quarantine of a Client: the option's, or its max
// TTL and its drift allowance under the Client's drift factor.
func quarantineFor(cfg config) time.Duration {
	if cfg.quarantine != nil {
		return *cfg.quarantine
	}
	return cfg.longest() + driftOf(cfg.driftFactor, cfg.longest())
}

// clockHold is how long a node out for a clock fault stays out: the
// quarantine, or the max TTL and its drift when the quarantine is off.
func clockHold(cfg config) time.Duration {
	if hold := quarantineFor(cfg); hold > 0 {
		return hold
	}
	return cfg.longest() + driftOf(cfg.driftFactor, cfg.longest())
}

// reportNode is the node layer's Reporter: what a node's health check
// found, as an event naming the node.
func (c *Client) reportNode(ctx context.Context, i int, r node.Report, err error) {
	kind := NodeQuarantined
	switch r {
	case node.Unverified:
		kind = NodeUnverified
	case node.ClockFault:
		kind = NodeClockFault
	case node.SameServer:
		kind = NodeSameServer
	case node.Returned:
		var back *node.ReturnedError
		if errors.As(err, &back) {
			c.emit(ctx, Event{Kind: NodeReturned, Addr: c.nodes.Addr(i), Duration: back.After})
		}
		return
	}
	c.emit(ctx, Event{Kind: kind, Addr: c.nodes.Addr(i), Err: &NodeError{Node: i, Addr: c.nodes.Addr(i), Err: err}})
}

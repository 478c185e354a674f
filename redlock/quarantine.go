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
// every write stays out of the majority: until its uptime reaches d, its
// yes counts toward no acquisition, grant, extension or fence. The default
// is the Client's max TTL plus its drift allowance (DefaultQuarantine with
// the defaults), lengthened to a larger max TTL recorded on the nodes by
// another Client. A d shorter than the max TTL states that no lock on these
// nodes lives longer; 0 disables the check.
//
// A node counts at once when it persists every write (appendonly yes,
// appendfsync always) or carries the fresh-start declaration
// (pool.FreshStartKey, DeclareFresh) for its current run. A node that
// restarted alone counts again, with a NodeReturned event, once its peers
// show that every lock it could have forgotten has expired. A node whose
// uptime cannot be read counts, and is reported (NodeUnverified); one
// whose persistence cannot be read is taken not to persist.
//
// A Redis Cluster node is judged per key by the master of the key's slot
// (one more round trip per yes): a master that restarted, or took over
// from another, less than d ago does not count. See docs/safety.md, "What
// the client enforces: the restart quarantine" and "Redis Cluster nodes".
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

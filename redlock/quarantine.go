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
// yes counts toward no acquisition, extension or fence. The default is the
// Client's max TTL plus its drift allowance (DefaultQuarantine), or longer
// when another Client recorded a larger max TTL on the nodes; 0 disables
// the check. A node counts at once when it persists every write or carries
// a fresh-start declaration for its run (DeclareFresh), and sooner when its
// peers show that every lock it could have forgotten has expired
// (NodeReturned). On a Redis Cluster node the master of the key's slot is
// judged, failovers included. See docs/safety.md, "What the client
// enforces: the restart quarantine".
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

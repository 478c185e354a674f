package redlock

import (
	"fmt"
	"time"
)

// DefaultMaxTTL is a Client's longest TTL when WithMaxTTL is not given: a
// minute. Locks kept alive by Do or WithAutoExtend need a TTL of seconds
// (peers default to 8s-60s), and the bound sets the restart quarantine of
// a node that cannot persist every write: with a minute, brand-new stock
// Redis nodes (no appendonly, no declaration) count about 61s after their
// start, within a first try of the README's Quick start.
const DefaultMaxTTL = time.Minute

// WithMaxTTL sets the longest TTL the Client accepts, d between 1ms and
// MaxTTL (the default is DefaultMaxTTL). Every acquisition refuses a longer
// TTL with an error that names the option to set.
//
// The bound is what the restart quarantine must cover (WithQuarantine), so
// every Client of the same nodes should use the same one. The Client
// records its bound on each standalone node it grants a lease on, and
// adopts a larger recorded bound for its quarantine; a node young enough
// for the bound to matter counts only once the Client has read the records
// of a quorum of the nodes. See docs/safety.md, "What the client enforces:
// the restart quarantine".
func WithMaxTTL(d time.Duration) Option {
	return func(c *config) {
		if d < time.Millisecond || d > MaxTTL {
			c.fail("max ttl must be between 1ms and %v, got %v", MaxTTL, d)
			return
		}
		c.maxTTL = d
	}
}

// longest is the Client's longest TTL: WithMaxTTL's, or DefaultMaxTTL.
func (c *config) longest() time.Duration {
	if c.maxTTL > 0 {
		return c.maxTTL
	}
	return DefaultMaxTTL
}

// checkLongest refuses a ttl longer than the Client's longest, with an
// error that says what to set.
func (c *config) checkLongest(ttl time.Duration) error {
	if ttl <= c.longest() {
		return nil
	}
	if ttl > MaxTTL {
		return fmt.Errorf("redlock: ttl %v is longer than %v, the longest any Client allows: keep long work alive with WithAutoExtend", ttl, MaxTTL)
	}
	return fmt.Errorf("redlock: ttl %v is longer than this Client's max TTL %v: give every Client of these nodes WithMaxTTL(%v) or more (the restart quarantine follows it), or keep the lock alive with WithAutoExtend",
		ttl, c.longest(), ttl)
}

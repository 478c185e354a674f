package redlock

import "time"

// WithClockCheck makes the Client read every node's clock (TIME) every d,
// in the background, and compare its progress with the Client's monotonic
// clock. A node whose clock ran fast or jumped forward beyond the drift
// allowance expires keys early: its yes does not count (the per-node error
// wraps ErrNodeClock) until the quarantine (WithQuarantine; MaxTTL plus
// drift when that is off) has passed without a new fault. Each fault is
// reported once as a NodeClockFault event.
//
// The check is off by default (d = 0); otherwise d must be between
// MinClockCheck and MaxTTL, or New fails. It costs one TIME per node every
// d, never on the path of a call; Close stops it. It sees a fault only
// after it happened, and does not see a slow clock, which only keeps keys
// longer. See docs/safety.md, "What the client checks: node clocks".
func WithClockCheck(d time.Duration) Option {
	return func(c *config) {
		if d != 0 && (d < MinClockCheck || d > MaxTTL) {
			c.fail("clock check interval must be 0 (off) or between %v and %v, got %v", MinClockCheck, MaxTTL, d)
			return
		}
		c.clockEvery = d
	}
}

// MinClockCheck is the shortest interval WithClockCheck accepts. Readings
// closer together tell no more (a comparison spans the last ten, and the
// round trips widen its bound), while each costs a TIME on every node: a
// nanosecond, a likely unit mistake, would send thousands a second.
const MinClockCheck = 10 * time.Millisecond

package redlock

import "time"

// WithClockCheck makes the Client read every node's clock (TIME) every d,
// in the background, and compare its progress with the Client's monotonic
// clock over the last clockWindow readings. A node whose clock advanced
// more than the drift allowance permits (the drift factor of the elapsed
// time, plus 2ms), counting the round trips against the node, ran fast or
// jumped forward: it expires keys early. Its yes then does not count toward
// acquisitions, grants, extensions or fences (the per-node error wraps
// ErrNodeClock) until the quarantine (WithQuarantine; MaxTTL plus drift
// when that is off) has passed without a new fault, since keys it holds
// from before the fault may expire early for that long. Each fault is
// reported once as a NodeClockFault event with the measured rate.
//
// The check is off by default (d = 0). It costs one TIME per node every d,
// never on the path of a call; each is bounded by the node timeout, and
// Close stops the readings. It sees a fault only after it happened: a jump
// between two readings can still shorten a lock taken just before it was
// noticed. It does not see a slow clock, which only keeps keys longer.
//
// d is 0 or between MinClockCheck and MaxTTL; New refuses any other value.
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

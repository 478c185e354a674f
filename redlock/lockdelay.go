package redlock

import "time"

// WithLockDelay turns on the lock-delay: after a lock expired without a
// release (its holder crashed, paused or was cut off), no one gets the key
// for d more, so that a holder still acting past its lease has d to stop.
// A lock released by Unlock passes on at once. Off by default; d must be
// between 1ms and MaxTTL, in whole milliseconds. A node in a lock-delay
// refuses the key with a NodeError wrapping ErrLockDelay that names the
// time left. It covers every kind and only adds refusals. The delay is kept
// on the nodes, so every Client of a key must use the same d. See
// docs/safety.md, "What the client adds on request: lock-delay (opt-in)".
func WithLockDelay(d time.Duration) Option {
	return func(c *config) {
		if d < time.Millisecond || d > MaxTTL {
			c.fail("lock delay must be between 1ms and %v, got %v", MaxTTL, d)
			return
		}
		c.lockDelay = d.Truncate(time.Millisecond)
	}
}

package wait

import (
	"time"

	"github.com/redlockgo/redlock/internal/random"
)

// Strategy decides how long a blocking call waits before each new
// attempt; redlock.RetryStrategy is the same interface. Implementations
// must be safe for concurrent use.
type Strategy interface {
	// NextDelay returns the wait before retry number attempt (1 for the first
	// retry). ok false stops retrying.
	NextDelay(attempt int) (delay time.Duration, ok bool)
}

// MinDelay is the floor under every delay a Strategy returns: a delay
// below it, zero or negative included, counts as MinDelay, so that no
// strategy makes a blocking call of any kind poll a node more often than
// every 10ms (a waiter is woken by releases, not by polling: retries only
// cover a lost message and a key that vanished without a release).
const MinDelay = 10 * time.Millisecond

// Func adapts a function to a Strategy.
type Func func(attempt int) (time.Duration, bool)

// NextDelay calls f.
func (f Func) NextDelay(attempt int) (time.Duration, bool) { return f(attempt) }

// Exponential doubles the delay from lo up to hi, and picks each delay at
// random in its upper half. Bad bounds are corrected: lo at least
// 2*MinDelay (so that its jitter stays above the floor), hi at least lo.
func Exponential(lo, hi time.Duration) Strategy {
	lo = max(lo, 2*MinDelay)
	return exponential{lo: lo, hi: max(hi, lo)}
}

type exponential struct{ lo, hi time.Duration }

// NextDelay implements Strategy.
func (e exponential) NextDelay(attempt int) (time.Duration, bool) {
	d := e.hi
	if attempt < 32 {
		d = min(e.lo<<max(attempt-1, 0), e.hi)
	}
	return jitter(d), true
}

// Constant waits d, picked at random in its upper half, between attempts.
// d is at least 2*MinDelay (so that its jitter stays above the floor).
func Constant(d time.Duration) Strategy {
	return constant(max(d, 2*MinDelay))
}

type constant time.Duration

// NextDelay implements Strategy.
func (c constant) NextDelay(int) (time.Duration, bool) { return jitter(time.Duration(c)), true }

// Limit stops s after n retries (n+1 attempts in all); a nil s stops at
// once.
func Limit(s Strategy, n int) Strategy {
	return Func(func(attempt int) (time.Duration, bool) {
		if attempt > n || s == nil {
			return 0, false
		}
		return s.NextDelay(attempt)
	})
}

// jitter returns a random duration in [d/2, d].
func jitter(d time.Duration) time.Duration {
	half := d / 2
	return half + random.N(d-half+1)
}

package redlock

import (
	"time"

	"github.com/redlockgo/redlock/internal/wait"
)

// RetryStrategy decides how long the blocking calls (Lock, RLock,
// AcquirePermit, LockAll and the Do calls) wait before each new attempt.
// Implementations must be safe for concurrent use. A delay below 10ms
// (the floor), zero or negative included, counts as 10ms in every one
// of them, so that no strategy makes a blocked call of any kind poll a node
// more often than every 10ms: they wait on wake-ups (a release announces
// itself), and retries only cover a lost message or a key that vanished
// without a release.
type RetryStrategy interface {
	// NextDelay returns the wait before retry number attempt (1 for the first
	// retry). ok false stops retrying: the call then returns the last error.
	NextDelay(attempt int) (delay time.Duration, ok bool)
}

// RetryFunc adapts a function to a RetryStrategy.
type RetryFunc func(attempt int) (time.Duration, bool)

// NextDelay calls f.
func (f RetryFunc) NextDelay(attempt int) (time.Duration, bool) { return f(attempt) }

var defaultRetry = ExponentialBackoff(25*time.Millisecond, 250*time.Millisecond)

// ExponentialBackoff doubles the delay from lo up to hi, and picks each delay
// at random in its upper half, so that competing clients spread out. Bad
// bounds are corrected: lo at least 20ms (twice the 10ms floor, so that the
// jitter keeps every delay at or above it), hi at least lo.
//
// A waiting Lock is handed the lock by the release it waits for; its rounds
// at these delays only refresh its place in the queues and cover a lost
// message or an expired holder, so hi bounds how long those take to notice.
func ExponentialBackoff(lo, hi time.Duration) RetryStrategy { return wait.Exponential(lo, hi) }

// ConstantBackoff waits d, picked at random in its upper half, between
// attempts. d is at least 20ms (twice the 10ms floor).
func ConstantBackoff(d time.Duration) RetryStrategy { return wait.Constant(d) }

// NoRetry makes Lock behave like TryLock: one attempt.
func NoRetry() RetryStrategy {
	return RetryFunc(func(int) (time.Duration, bool) { return 0, false })
}

// LimitRetry stops s after n retries (n+1 attempts in all).
func LimitRetry(s RetryStrategy, n int) RetryStrategy {
	return RetryFunc(wait.Limit(s, n).NextDelay) // a nil s stays nil: no retry
}

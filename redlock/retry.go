package redlock

import (
	"math/rand/v2"
	"time"
)

// RetryStrategy decides how long Lock waits before each new attempt.
// Implementations must be safe for concurrent use.
type RetryStrategy interface {
	// NextDelay returns the wait before retry number attempt (1 for the first
	// retry). ok false stops retrying: Lock then returns the last error.
	NextDelay(attempt int) (delay time.Duration, ok bool)
}

// RetryFunc adapts a function to a RetryStrategy.
type RetryFunc func(attempt int) (time.Duration, bool)

// NextDelay calls f.
func (f RetryFunc) NextDelay(attempt int) (time.Duration, bool) { return f(attempt) }

var defaultRetry = ExponentialBackoff(2*time.Millisecond, 100*time.Millisecond)

// capped is a strategy whose delays never exceed a known bound. A waiter
// that is subscribed to release messages, and whose attempt found the lock
// held by others, sleeps about that bound: the holder's release will wake it,
// and the backoff is only the fallback for a lost message or an expiry.
type capped interface {
	RetryStrategy
	cap() time.Duration
}

// capOf returns s's bound on its delays, if it has one.
func capOf(s RetryStrategy) (time.Duration, bool) {
	if c, ok := s.(capped); ok {
		return c.cap(), true
	}
	return 0, false
}

// ExponentialBackoff doubles the delay from lo up to hi, and picks each delay
// at random in its upper half, so that competing clients spread out. Bad
// bounds are corrected: lo at least 1ms, hi at least lo.
//
// While release messages reach a waiter (every Redis node answers pub/sub),
// hi is also how long it sleeps after finding the lock held: the release
// wakes it sooner. lo is the delay after an attempt that won some nodes but
// not a majority (a split between contenders, or a race with a release).
func ExponentialBackoff(lo, hi time.Duration) RetryStrategy {
	lo = max(lo, time.Millisecond)
	return exponential{lo: lo, hi: max(hi, lo)}
}

type exponential struct{ lo, hi time.Duration }

func (e exponential) NextDelay(attempt int) (time.Duration, bool) {
	d := e.hi
	if attempt < 32 {
		d = min(e.lo<<max(attempt-1, 0), e.hi)
	}
	return jitter(d), true
}

func (e exponential) cap() time.Duration { return e.hi }

// ConstantBackoff waits d, picked at random in its upper half, between
// attempts. d is at least 1ms.
func ConstantBackoff(d time.Duration) RetryStrategy {
	return constant(max(d, time.Millisecond))
}

type constant time.Duration

func (c constant) NextDelay(int) (time.Duration, bool) { return jitter(time.Duration(c)), true }

func (c constant) cap() time.Duration { return time.Duration(c) }

// NoRetry makes Lock behave like TryLock: one attempt.
func NoRetry() RetryStrategy {
	return RetryFunc(func(int) (time.Duration, bool) { return 0, false })
}

// LimitRetry stops s after n retries (n+1 attempts in all).
func LimitRetry(s RetryStrategy, n int) RetryStrategy {
	f := RetryFunc(func(attempt int) (time.Duration, bool) {
		if attempt > n || s == nil {
			return 0, false
		}
		return s.NextDelay(attempt)
	})
	if c, ok := capOf(s); ok {
		return limited{RetryFunc: f, bound: c}
	}
	return f
}

type limited struct {
	RetryFunc
	bound time.Duration
}

func (l limited) cap() time.Duration { return l.bound }

// jitter returns a random duration in [d/2, d].
func jitter(d time.Duration) time.Duration {
	half := d / 2
	return half + rand.N(d-half+1)
}

// Package clock is the source of time for every decision the lock makes:
// validity, extension schedules and retry delays.
//
// Production code uses [Real], which reads the monotonic clock through the
// time package. Tests use [Fake], whose time moves only when the test says so,
// which makes validity boundaries and schedules deterministic.
package clock

import "time"

// Clock tells the time and makes timers.
//
// Implementations must be safe for concurrent use. Durations between two
// readings of Now must be measured with Since (or Sub on values that carry a
// monotonic reading), never from wall-clock fields.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Since returns the time elapsed since t.
	Since(t time.Time) time.Duration
	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer, like [time.Timer] but behind an interface so a
// fake clock can fire it.
type Timer interface {
	// C returns the channel on which the timer delivers the time when it fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether the call stopped
	// the timer, false if it had already fired or been stopped.
	Stop() bool
}

// Real is the system clock. Its zero value is ready to use.
type Real struct{}

// Now returns time.Now(), which carries a monotonic reading.
func (Real) Now() time.Time { return time.Now() }

// Since returns time.Since(t), measured on the monotonic clock when t has one.
func (Real) Since(t time.Time) time.Duration { return time.Since(t) }

// NewTimer returns a [time.Timer] behind the Timer interface.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

package redistest

import (
	"fmt"
	"testing"
	"time"
)

// A test that waits on real time for something the library or Redis
// decides says how long it waits and why: its bound is derived from the
// configuration the test set (node timeout, TTL, quarantine, reload
// interval), with a margin for a loaded machine, and the derivation is in
// a comment at the call. A bound costs time only when the test fails, so
// the margin can be wide; a bound that must end before something else (a
// lock's validity) is that thing's deadline. docs/testing.md has the
// rules.

// WaitFor calls cond until it reports ok, and fails t (Fatalf) when bound
// has passed first, with what was waited for, how long, and what cond saw
// on its last call. cond runs on the calling goroutine, so it may fail t
// itself; it is called at least once, and once more after bound passes
// only when its last call began before that. Call it from the test's
// goroutine; from others use Await.
func WaitFor(t testing.TB, bound time.Duration, what string, cond func() (ok bool, seen string)) {
	t.Helper()
	if err := Await(bound, what, cond); err != nil {
		t.Fatal(err)
	}
}

// Await is WaitFor that returns the failure as an error instead, for a
// goroutine other than the test's. It returns nil once cond reports ok.
func Await(bound time.Duration, what string, cond func() (ok bool, seen string)) error {
	start := time.Now()
	deadline := start.Add(bound)
	tick := min(max(bound/200, 5*time.Millisecond), 100*time.Millisecond)
	for {
		began := time.Now()
		ok, seen := cond()
		if ok {
			return nil
		}
		if !began.Before(deadline) {
			return fmt.Errorf("waited %v (bound %v) for %s; last seen: %s",
				time.Since(start).Round(time.Millisecond), bound, what, seen)
		}
		time.Sleep(min(tick, max(time.Until(deadline), 0)))
	}
}

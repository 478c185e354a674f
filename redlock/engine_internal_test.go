package redlock

import (
	"testing"
	"time"
)

// A multi-lock's Unlock allows each node call 50µs per key, at least the
// node timeout and at most MaxNodeTimeout; one key keeps the node timeout.
func TestReleaseTimeout(t *testing.T) {
	for _, tc := range []struct {
		timeout time.Duration
		keys    int
		want    time.Duration
	}{
		{50 * time.Millisecond, 1, 50 * time.Millisecond},
		{50 * time.Millisecond, 2, 50 * time.Millisecond},
		{50 * time.Millisecond, 1000, 50 * time.Millisecond},
		{10 * time.Millisecond, 1000, 50 * time.Millisecond},
		{time.Millisecond, 20000, MaxNodeTimeout},
		{time.Second, 1000, time.Second},
	} {
		if got := releaseTimeout(tc.timeout, tc.keys); got != tc.want {
			t.Errorf("releaseTimeout(%v, %d) = %v, want %v", tc.timeout, tc.keys, got, tc.want)
		}
	}
}

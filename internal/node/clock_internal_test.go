package node

import (
	"errors"
	"testing"
	"time"
)

// readings feeds w node 0's readings every step on our clock, the node's
// clock advancing rate times as fast plus jump at reading jumpAt, each
// with round trip rtt, and returns the faults reported.
func readings(w *clockWatch, n int, step, rtt time.Duration, rate float64, jumpAt int, jump time.Duration) []error {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var faults []error
	var node time.Duration = 1000 * time.Hour
	for k := range n {
		sent := base.Add(time.Duration(k) * step)
		if k > 0 {
			node += time.Duration(float64(step) * rate)
		}
		if k == jumpAt {
			node += jump
		}
		if err := w.add(0, clockSample{sent: sent, recv: sent.Add(rtt), node: node}); err != nil {
			faults = append(faults, err)
		}
	}
	return faults
}

func TestClockWatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rtt    time.Duration
		rate   float64
		jump   time.Duration
		faults int
	}{
		{"same rate", time.Millisecond, 1, 0, 0},
		{"within the drift factor", time.Millisecond, 1.008, 0, 0},
		{"slow", time.Millisecond, 0.5, 0, 0},
		{"long round trips widen the bound", 200 * time.Millisecond, 1.015, 0, 0},
		{"fast", time.Millisecond, 2, 0, 1},
		{"a little too fast", time.Millisecond, 1.03, 0, 1},
		{"forward jump", time.Millisecond, 1, 5 * time.Second, 1},
		{"backward jump", time.Millisecond, 1, -5 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newClockWatch(1, 0.01, time.Hour)
			faults := readings(w, 40, time.Second, tc.rtt, tc.rate, 20, tc.jump)
			if len(faults) != tc.faults {
				t.Fatalf("faults = %v, want %d", faults, tc.faults)
			}
			for _, f := range faults {
				if !errors.Is(f, ErrClock) {
					t.Errorf("%v does not wrap ErrClock", f)
				}
			}
		})
	}
}

func TestClockWatchHoldsTheNodeOut(t *testing.T) {
	w := newClockWatch(1, 0.01, time.Minute)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	node := time.Duration(0)
	add := func(at time.Duration) error {
		return w.add(0, clockSample{sent: base.Add(at), recv: base.Add(at), node: node})
	}
	if add(0) != nil {
		t.Fatal("a first reading shows nothing")
	}
	node += 3 * time.Second // a jump of 2s within one second
	err := add(time.Second)
	if !errors.Is(err, ErrClock) {
		t.Fatalf("jump not reported: %v", err)
	}
	t.Log(err)
	if w.suspect(0, base.Add(time.Minute)) == nil {
		t.Error("the node counts again before the hold ended")
	}
	if w.suspect(0, base.Add(time.Minute+time.Second)) != nil {
		t.Error("the node is still out after the hold")
	}
	var none *clockWatch
	if none.suspect(0, base) != nil {
		t.Error("without the check every node counts")
	}
}

package redlocktest_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlocktest"
)

// TestSetClockDrivesExpiryAndTime gives every node a clock of its own and
// takes a lock of 1s: 300ms later, a clock four times as fast, or one that
// jumped 2s ahead, has ended the key on every node (another Client takes
// it while the first lock's Until is still ahead: what a clock fault
// does), and TIME reads that clock; with the shared clock, a nil clock or
// none, the key is still held.
func TestSetClockDrivesExpiryAndTime(t *testing.T) {
	ctx := context.Background()
	clocks := []struct {
		name  string
		clock func(start time.Time) func(time.Time) time.Time
		ahead time.Duration // of the shared clock at 300ms
	}{
		{name: "none"},
		{name: "nil", clock: func(time.Time) func(time.Time) time.Time { return nil }},
		{name: "4x", ahead: 900 * time.Millisecond, clock: func(start time.Time) func(time.Time) time.Time {
			return func(now time.Time) time.Time { return start.Add(4 * now.Sub(start)) }
		}},
		{name: "jump", ahead: 2 * time.Second, clock: func(start time.Time) func(time.Time) time.Time {
			return func(now time.Time) time.Time {
				if now.Sub(start) >= 100*time.Millisecond {
					return now.Add(2 * time.Second)
				}
				return now
			}
		}},
	}
	for _, tc := range clocks {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes := redlocktest.New(t, 3)
				if tc.clock != nil {
					for i := range 3 {
						nodes.SetClock(i, tc.clock(time.Now()))
					}
				}
				l, err := nodes.Client().TryLock(ctx, "k", time.Second)
				if err != nil {
					t.Fatalf("TryLock: %v", err)
				}
				time.Sleep(300 * time.Millisecond)
				other, err := nodes.Client().TryLock(ctx, "k", time.Second)
				if took := err == nil; took != (tc.ahead > 0) {
					t.Errorf("another Client took the key: %v (%v), want %v; the first lock's Until is %v ahead", took, err, tc.ahead > 0, time.Until(l.Until()))
				}
				if other != nil {
					_ = other.Unlock(ctx)
				}
				reply, err := nodes.Pools()[0].(pool.Commander).Do(ctx, "TIME")
				if err != nil {
					t.Fatalf("TIME: %v", err)
				}
				if got, want := nodeTime(t, reply), time.Now().Add(tc.ahead); !got.Equal(want.Truncate(time.Microsecond)) {
					t.Errorf("TIME = %v, want %v", got, want)
				}
			})
		})
	}
}

// nodeTime reads TIME's reply: seconds and microseconds.
func nodeTime(t *testing.T, reply any) time.Time {
	t.Helper()
	parts, ok := reply.([]any)
	if !ok || len(parts) != 2 {
		t.Fatalf("TIME replied %#v", reply)
	}
	var sec, usec int64
	for i, p := range []*int64{&sec, &usec} {
		s, _ := parts[i].(string)
		if _, err := fmt.Sscan(s, p); err != nil {
			t.Fatalf("TIME replied %#v: %v", reply, err)
		}
	}
	return time.Unix(sec, usec*1000)
}

package redistest_test

import (
	"testing"
	"time"

	"github.com/redlockgo/redlock/internal/redistest"
)

// A fake clock moves the server's TIME (and so its expiry) and nothing else;
// a server without one refuses SetClock.
func TestFakeClock(t *testing.T) {
	s := redistest.StartWithFakeClock(t, redistest.NoPersistence)
	c := s.Client(t)
	skew := func() time.Duration {
		t.Helper()
		before := time.Now()
		node, err := c.Time(t.Context()).Result()
		if err != nil {
			t.Fatal(err)
		}
		return node.Sub(before)
	}
	if d := skew(); d < -time.Second || d > time.Second {
		t.Fatalf("a fake clock at (0, 1) is %v off", d)
	}
	if err := s.SetClock(time.Hour, 1); err != nil {
		t.Fatal(err)
	}
	if d := skew(); d < time.Hour-time.Second || d > time.Hour+time.Second {
		t.Fatalf("after a jump of 1h the clock is %v off", d)
	}
	// A key that has an hour to live on the real clock is gone after a jump
	// of two hours.
	if err := c.Set(t.Context(), "k", "v", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.SetClock(3*time.Hour, 1); err != nil {
		t.Fatal(err)
	}
	if n := c.Exists(t.Context(), "k").Val(); n != 0 {
		t.Fatal("the key outlived a jump past its expiry")
	}

	for _, rate := range []float64{0, -1} {
		if err := s.SetClock(0, rate); err == nil {
			t.Errorf("rate %v accepted", rate)
		}
	}
	plain := redistest.Start(t, redistest.NoPersistence)
	if err := plain.SetClock(time.Second, 1); err == nil {
		t.Error("SetClock on a server without a fake clock succeeded")
	}
}

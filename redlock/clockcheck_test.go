package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/internal/scripts"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// fakeTimePool answers TIME from the fake clock, rate times as fast as it;
// everything else goes to the node.
type fakeTimePool struct {
	pool.Pool
	clk   *clock.Fake
	start time.Time
	rate  float64
}

// Identity forwards the node's: the clock check's TIME script must reach
// Eval as it is, not read through INFO as a Pool that tells nothing is.
func (p *fakeTimePool) Identity() (pool.Identity, bool) { return identityOf(p.Pool) }

func (p *fakeTimePool) Eval(ctx context.Context, s *pool.Script, keys []string, args ...any) (any, error) {
	if s != scripts.Time {
		return p.Pool.Eval(ctx, s, keys, args...)
	}
	now := time.Duration(float64(p.clk.Since(p.start))*p.rate) + time.Duration(p.start.UnixMicro())*time.Microsecond
	return []any{fmt.Sprint(int64(now / time.Second)), fmt.Sprint(int64(now%time.Second) / 1000)}, nil
}

func TestClockCheckWithTheFakeClock(t *testing.T) {
	clk := fakeClock()
	fn := newFakeNodes(t, 3)
	pools := make([]pool.Pool, 3)
	rates := []float64{1.5, 1.5, 1.005}
	for i, p := range fn.pools {
		pools[i] = &fakeTimePool{Pool: p, clk: clk, start: clk.Now(), rate: rates[i]}
	}
	rec := &recorder{}
	c := newClient(t, pools, redlock.WithTimeSource(clk), redlock.WithClockCheck(time.Second),
		redlock.WithQuarantine(time.Minute), redlock.WithObserver(rec))
	for range 3 {
		<-clk.BlockUntil(1) // the check sleeps
		clk.Advance(time.Second)
	}
	<-clk.BlockUntil(1)
	faulty := map[int]bool{}
	for _, e := range rec.snapshot() {
		if e.Kind == redlock.NodeClockFault {
			var ne *redlock.NodeError
			require.ErrorAs(t, e.Err, &ne)
			assert.ErrorContains(t, e.Err, "rate 1.500")
			faulty[ne.Node] = true
		}
	}
	assert.Equal(t, map[int]bool{0: true, 1: true}, faulty, "node 2 is within the drift factor")

	_, err := c.TryLock(bg(), "k", time.Second)
	require.ErrorIs(t, err, redlock.ErrNodeClock)
	c.WaitIdle()
	require.NoError(t, c.Close(), "Close stops the readings (goleak checks)")
}

// The interval is 0 (off) or between MinClockCheck and MaxTTL: a few
// nanoseconds, a likely unit mistake, would read every node's clock
// thousands of times a second.
func TestClockCheckOption(t *testing.T) {
	pools := newFakeNodes(t, 1).pools
	for _, tc := range []struct {
		d  time.Duration
		ok bool
	}{
		{0, true},
		{-time.Second, false},
		{5 * time.Nanosecond, false},
		{redlock.MinClockCheck - time.Nanosecond, false},
		{redlock.MinClockCheck, true},
		{time.Second, true},
		{redlock.MaxTTL, true},
		{redlock.MaxTTL + time.Nanosecond, false},
	} {
		t.Run(tc.d.String(), func(t *testing.T) {
			c, err := redlock.New(pools, redlock.WithClockCheck(tc.d))
			if tc.ok {
				require.NoError(t, err)
				require.NoError(t, c.Close())
				return
			}
			require.EqualError(t, err, fmt.Sprintf(
				"redlock: clock check interval must be 0 (off) or between 10ms and 24h0m0s, got %v", tc.d))
		})
	}
}

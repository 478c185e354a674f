package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// tryLockUntilObtained takes key with a short node timeout on a loaded
// machine: an attempt that failed for want of time is simply made again.
func tryLockUntilObtained(t *testing.T, c *redlock.Client, ttl time.Duration, opts ...redlock.LockOption) *redlock.Lock {
	t.Helper()
	var err error
	for range 20 {
		var l *redlock.Lock
		if l, err = c.TryLock(bg(), "k", ttl, opts...); err == nil {
			return l
		}
		c.WaitIdle()
	}
	t.Fatalf("lock not obtained: %v", err)
	return nil
}

// Every accepted combination of ttl, node timeout and interval declares the
// loss before Until(), even when each extension hangs for its full node
// timeout: a majority of the nodes never answers. In a synctest bubble,
// so the bound is exact: the loss margin before Until(), as WithAutoExtend
// states.
func TestLossDeclaredBeforeUntilWhenNodesHang(t *testing.T) {
	virtual(t)
	for _, tc := range []struct {
		name        string
		ttl         time.Duration
		nodeTimeout time.Duration // 0: the default, min(ttl/20, 500ms)
		interval    time.Duration
	}{
		{"default node timeout", 2 * time.Second, 0, 0},
		{"node timeout above ttl/4", time.Second, 300 * time.Millisecond, 0},
		{"node timeout above ttl/4, long interval", time.Second, 300 * time.Millisecond, 700 * time.Millisecond},
		{"shortest ttl accepted for that node timeout", 912 * time.Millisecond, 300 * time.Millisecond, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes := newBubbleNodes(t, 3)
				var opts []redlock.Option
				nt := min(tc.ttl/20, redlock.MaxNodeTimeout)
				if tc.nodeTimeout > 0 {
					nt = tc.nodeTimeout
					opts = append(opts, redlock.WithNodeTimeout(nt))
				}
				c, err := redlock.New(nodes.pools, opts...)
				require.NoError(t, err)
				t.Cleanup(func() { _ = c.Close() })
				l, err := c.TryLock(t.Context(), "k", tc.ttl, redlock.WithAutoExtend(tc.interval))
				require.NoError(t, err)
				synctest.Wait() // the set landed on every node

				nodes.faults[0].Hang(true)
				nodes.faults[1].Hang(true)
				until := l.Until()
				margin := max(tc.ttl/10, 2*nt)
				<-l.Done()
				lostAt := time.Now()
				latest := until.Add(-margin)
				assert.True(t, lostAt.Before(until), "lost at %v, validity ends %v", lostAt, until)
				assert.False(t, lostAt.After(latest),
					"lost at %v: %v before the end of validity, the margin is %v", lostAt, until.Sub(lostAt), margin)
				require.ErrorIs(t, l.Err(), redlock.ErrLockLost)
				require.ErrorIs(t, l.Err(), redlock.ErrNodeTimeout)
				require.NotErrorIs(t, l.Err(), context.DeadlineExceeded, "the cut is the keeper's, not a caller's deadline")
			})
		})
	}
}

// deadlineRecorder fails every script call once armed, and records how
// much time its context had left: the extension's bound.
type deadlineRecorder struct {
	pool.Pool
	mu    sync.Mutex
	armed bool
	left  []time.Duration
}

func (d *deadlineRecorder) Eval(ctx context.Context, s *pool.Script, keys []string, args ...any) (any, error) {
	d.mu.Lock()
	armed := d.armed
	if armed {
		if dl, ok := ctx.Deadline(); ok {
			d.left = append(d.left, time.Until(dl))
		}
	}
	d.mu.Unlock()
	if armed {
		return nil, errDown
	}
	return d.Pool.Eval(ctx, s, keys, args...)
}

func (d *deadlineRecorder) arm() {
	d.mu.Lock()
	d.armed = true
	d.mu.Unlock()
}

func (d *deadlineRecorder) shortest() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := time.Duration(1<<63 - 1)
	for _, l := range d.left {
		out = min(out, l)
	}
	return out
}

// An extension that starts shortly before the loss point is bounded by
// that point, not by the full node timeout.
func TestAutoExtendCutsTheLastExtensionAtTheLossPoint(t *testing.T) {
	fn := newFakeNodes(t, 3)
	rec := &deadlineRecorder{Pool: fn.pools[0]}
	rec1 := &deadlineRecorder{Pool: fn.pools[1]}
	clk := fakeClock()
	c := newClient(t, []pool.Pool{rec, rec1, fn.pools[2]}, redlock.WithTimeSource(clk)) // node timeout 1s
	l, err := c.TryLock(bg(), "k", keptTTL, redlock.WithAutoExtend(0))
	require.NoError(t, err)
	waitHolders(t, fn, l, 3)
	rec.arm()
	rec1.arm()
	advanceUntilDone(t, clk, l.Done(), 10*time.Millisecond)
	// Retries come every 417ms (ttl/3/8); the last starts less than that
	// before the loss point, and its nodes get what is left, not 1s.
	assert.Less(t, rec.shortest(), 600*time.Millisecond)
	require.ErrorIs(t, l.Err(), redlock.ErrLockLost)
}

func TestAutoExtendRefusesTTLTooShortForTheMargin(t *testing.T) {
	for _, tc := range []struct {
		nodeTimeout time.Duration // 0: the default
		ttl         time.Duration
		ok          bool
	}{
		{0, 5 * time.Millisecond, false},
		{0, 6 * time.Millisecond, true},
		{0, time.Second, true},
		{300 * time.Millisecond, 911 * time.Millisecond, false},
		{300 * time.Millisecond, 912 * time.Millisecond, true},
		{time.Second, 3 * time.Second, false},
		{time.Second, 4 * time.Second, true},
	} {
		t.Run(fmt.Sprintf("timeout %v ttl %v", tc.nodeTimeout, tc.ttl), func(t *testing.T) {
			// Fresh nodes: a 6ms lock has a 1ms node timeout, and its
			// release may not get through on a loaded machine.
			fn := newFakeNodes(t, 3)
			// A fake clock, so that a lock obtained is not kept alive meanwhile.
			opts := []redlock.Option{redlock.WithTimeSource(clock.NewFake(time.Now()))}
			if tc.nodeTimeout > 0 {
				opts = append(opts, redlock.WithNodeTimeout(tc.nodeTimeout))
			}
			c, err := redlock.New(fn.pools, opts...)
			require.NoError(t, err)
			defer c.Close()
			calls := []func() error{
				func() error { return unlockIfHeld(c.TryLock(bg(), "k", tc.ttl, redlock.WithAutoExtend(0))) },
				func() error {
					return unlockIfHeld(c.Lock(bg(), "k", tc.ttl, redlock.WithAutoExtend(0), redlock.WithRetry(redlock.NoRetry())))
				},
				func() error {
					return c.Do(bg(), "k", tc.ttl, func(context.Context) error { return nil }, redlock.WithRetry(redlock.NoRetry()))
				},
			}
			for i, call := range calls {
				err := call()
				if tc.ok {
					assert.NotContains(t, fmt.Sprint(err), "too short", "call %d", i)
				} else {
					require.ErrorContains(t, err, "too short to auto-extend", "call %d", i)
				}
				c.WaitIdle()
			}
			// Without auto-extension the margin does not apply.
			_, err = c.TryLock(bg(), "free", tc.ttl)
			assert.NotContains(t, fmt.Sprint(err), "too short")
		})
	}
	c := newClient(t, newFakeNodes(t, 3).pools)
	_, err := c.TryLock(bg(), "k", 3*time.Second, redlock.WithAutoExtend(0))
	require.EqualError(t, err, "redlock: ttl 3s is too short to auto-extend with node timeout 1s: "+
		"validity 2.968s must exceed the loss margin 2s (the larger of ttl/10 and twice the node timeout) "+
		"plus one node timeout; use a longer ttl or a shorter node timeout")
}

// unlockIfHeld unlocks l if the call that returned it succeeded.
func unlockIfHeld(l *redlock.Lock, err error) error {
	if err != nil {
		return err
	}
	return l.Unlock(bg())
}

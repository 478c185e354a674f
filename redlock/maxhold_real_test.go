package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

// On real nodes, with a 4s cap on a 2s TTL: every kind that auto-extends
// is lost by the cap (not before it by more than the margin and the last
// extension's drift), with ErrLockLost and ErrMaxHold, and its keys expire
// on the nodes by the cap.
//
// Each extension has about 900ms to get through, from its due time (ttl/3)
// to the loss point (the margin before the validity ends). With a 500ms
// TTL and its default 25ms node timeout it had about 280ms, and a loaded
// machine (two CPU hogs, make test and a second race build of this
// package) made Do's extension miss it: the loss's cause was the
// extension, not the cap.
const (
	realMaxHold         = 4 * time.Second
	realHoldTTL         = 2 * time.Second
	realHoldNodeTimeout = 200 * time.Millisecond
	realHoldMargin      = 2 * realHoldNodeTimeout // the loss margin: max(ttl/10, 2 node timeouts)
	// holdSlack bounds, on a loaded machine, how late the loss and the
	// keys' expiry may come after the cap, and how much earlier than the
	// margin the loss may come.
	holdSlack = 500 * time.Millisecond
)

func TestRealMaxHoldEndsEveryKind(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 3)
	c, err := redlock.New(pools, redlock.WithNodeTimeout(realHoldNodeTimeout))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	opts := []redlock.LockOption{redlock.WithAutoExtend(0), redlock.WithMaxHold(realMaxHold)}
	for _, tc := range []struct {
		name string
		keys []string
		lock func(keys []string) (*redlock.Lock, error)
	}{
		{"exclusive", []string{"ex"}, func(k []string) (*redlock.Lock, error) { return c.Lock(bg(), k[0], realHoldTTL, opts...) }},
		{"reader", []string{"rd"}, func(k []string) (*redlock.Lock, error) { return c.RLock(bg(), k[0], realHoldTTL, opts...) }},
		{"permit", []string{"pm"}, func(k []string) (*redlock.Lock, error) {
			return c.AcquirePermit(bg(), k[0], 2, realHoldTTL, opts...)
		}},
		{"multi", []string{"m1", "m2"}, func(k []string) (*redlock.Lock, error) { return c.LockAll(bg(), k, realHoldTTL, opts...) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			l, err := tc.lock(tc.keys)
			require.NoError(t, err)
			obtained := time.Now()
			select {
			case <-l.Done():
			case <-time.After(10 * realMaxHold):
				t.Fatal("the lock was kept past its maximum hold")
			}
			lostAt := time.Now()
			requireLostAtTheCap(t, start, obtained, lostAt)
			require.ErrorIs(t, l.Err(), redlock.ErrLockLost)
			require.ErrorIs(t, l.Err(), redlock.ErrMaxHold)
			require.ErrorContains(t, l.Err(), "held for the maximum of 4s")
			requireExpiresByTheCap(t, servers, obtained, tc.keys...)
			_ = l.Unlock(bg())
		})
	}
}

// Do and DoAll: fn's context ends with a cause wrapping ErrLockLost and
// ErrMaxHold, and the call returns it.
func TestRealMaxHoldEndsDo(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 3)
	c, err := redlock.New(pools, redlock.WithNodeTimeout(realHoldNodeTimeout))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	for _, tc := range []struct {
		name string
		keys []string
		do   func(keys []string, fn func(context.Context) error) error
	}{
		{"Do", []string{"do"}, func(k []string, fn func(context.Context) error) error {
			return c.Do(bg(), k[0], realHoldTTL, fn, redlock.WithMaxHold(realMaxHold))
		}},
		{"DoAll", []string{"da1", "da2"}, func(k []string, fn func(context.Context) error) error {
			return c.DoAll(bg(), k, realHoldTTL, fn, redlock.WithMaxHold(realMaxHold))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			var obtained, lostAt time.Time
			var cause error
			err := tc.do(tc.keys, func(ctx context.Context) error {
				obtained = time.Now()
				select {
				case <-ctx.Done():
				case <-time.After(10 * realMaxHold):
					return fmt.Errorf("fn ran past the maximum hold")
				}
				lostAt = time.Now()
				cause = context.Cause(ctx)
				requireExpiresByTheCap(t, servers, obtained, tc.keys...)
				return cause
			})
			require.ErrorIs(t, cause, redlock.ErrLockLost)
			require.ErrorIs(t, cause, redlock.ErrMaxHold)
			require.ErrorIs(t, err, redlock.ErrLockLost)
			require.ErrorIs(t, err, redlock.ErrMaxHold)
			requireLostAtTheCap(t, start, obtained, lostAt)
		})
	}
}

// requireLostAtTheCap checks that a lock obtained between start and
// obtained, capped at realMaxHold, was lost at lostAt: before the cap by
// about the loss margin, and not later than holdSlack after it.
func requireLostAtTheCap(t *testing.T, start, obtained, lostAt time.Time) {
	t.Helper()
	earliest := start.Add(realMaxHold - realHoldMargin - holdSlack)
	latest := obtained.Add(realMaxHold + holdSlack)
	assert.True(t, lostAt.After(earliest), "lost %v after the call began; the cap is %v", lostAt.Sub(start), realMaxHold)
	assert.True(t, lostAt.Before(latest), "lost %v after the lock was obtained; the cap is %v", lostAt.Sub(obtained), realMaxHold)
}

// requireExpiresByTheCap checks that none of keys outlives, on any server,
// the cap of a lock obtained at obtained (give or take holdSlack), then
// waits for them to vanish.
func requireExpiresByTheCap(t *testing.T, servers []*redistest.Server, obtained time.Time, keys ...string) {
	t.Helper()
	end := obtained.Add(realMaxHold + holdSlack)
	for i, s := range servers {
		rc := s.Client(t)
		for _, k := range keys {
			pttl, err := rc.PTTL(bg(), k).Result()
			require.NoError(t, err)
			if pttl > 0 {
				assert.True(t, time.Now().Add(pttl).Before(end),
					"node %d: %s expires %v after the lock was obtained; the cap is %v", i, k, time.Since(obtained)+pttl, realMaxHold)
			}
		}
	}
	// Every PTTL ends by end (checked above), and a read of an expired key
	// removes it: a second past end, for a slow read.
	awaitState(t, time.Until(end)+time.Second, "the keys gone once the cap has passed", func() bool {
		for _, s := range servers {
			if n, err := s.Client(t).Exists(bg(), keys...).Result(); err != nil || n > 0 {
				return false
			}
		}
		return true
	}, onServers(servers, keys...))
}

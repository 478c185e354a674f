package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

// With the fake clock: the keeper extends to the full TTL until less than
// a TTL is left to the cap, then once for what is left, and no more; the
// lock is lost the loss margin before the cap, with a cause naming it.
func TestMaxHoldStopsTheKeeperAtTheCap(t *testing.T) {
	const maxHold = 25 * time.Second
	fn := newFakeNodes(t, 3)
	clk := fakeClock()
	rec := &recorder{}
	c := newClient(t, fn.pools, redlock.WithTimeSource(clk), redlock.WithObserver(rec)) // node timeout 1s: margin 2s
	t0 := clk.Now()
	l, err := c.TryLock(bg(), "k", keptTTL, redlock.WithAutoExtend(0), redlock.WithMaxHold(maxHold))
	require.NoError(t, err)
	waitHolders(t, fn, l, 3)
	capAt, margin := t0.Add(maxHold), 2*time.Second

	// The nodes age their keys with the fake clock: an extension keeps the
	// longer of its TTL and what the key has left, so what a node keeps
	// depends on the time that passed on it.
	lostAt := advanceUntilLostBy(t, clk, l.Done(), 10*time.Millisecond, capAt.Add(-margin), fn.servers...)

	assert.False(t, lostAt.After(capAt.Add(-margin)), "lost %v before the cap; the margin is %v", capAt.Sub(lostAt), margin)
	assert.True(t, lostAt.After(capAt.Add(-margin-300*time.Millisecond)), "lost %v before the cap", capAt.Sub(lostAt))
	require.ErrorIs(t, l.Err(), redlock.ErrLockLost)
	require.ErrorIs(t, l.Err(), redlock.ErrMaxHold)
	require.EqualError(t, l.Err(), "redlock: lock lost: maximum hold reached: held for the maximum of 25s")
	assert.False(t, l.Until().After(capAt), "validity %v after the cap", l.Until().Sub(capAt))

	var exts []redlock.Event
	for _, e := range rec.snapshot() {
		if e.Kind == redlock.Extended {
			exts = append(exts, e)
		}
	}
	// At 3.3s, 6.7s, 10s, 13.3s to the full 10s, each ending before the
	// cap; at 16.7s to the cap, the last.
	require.Len(t, exts, 5)
	for _, e := range exts[:len(exts)-1] {
		assert.False(t, e.Start.Add(keptTTL).After(capAt), "a full extension at %v outlives the cap", e.Start.Sub(t0))
	}
	// A node keeps what an extension asked from when it ran it, which the
	// fake clock may have passed by up to the node timeout (1s) while the
	// call was on its way: the keys of a majority end by the cap, give or
	// take that; a node the last extension did not reach keeps an earlier
	// full one, which ends before the cap.
	cut := 0
	for _, srv := range fn.servers {
		end := clk.Now().Add(srv.TTL("k")) // the nodes aged with the clock
		if !end.After(capAt.Add(time.Second)) && !end.Before(capAt.Add(-time.Millisecond)) {
			cut++
		}
	}
	assert.GreaterOrEqual(t, cut, c.Quorum(), "the last extension was cut to the cap on a majority")
	require.NoError(t, l.Unlock(bg()), "Unlock still releases the keys, which have not expired yet")
}

// Do's context ends at the cap with a cause wrapping ErrLockLost and
// ErrMaxHold, and Do returns it.
func TestMaxHoldEndsDo(t *testing.T) {
	fn := newFakeNodes(t, 3)
	clk := fakeClock()
	c := newClient(t, fn.pools, redlock.WithTimeSource(clk))
	started := make(chan struct{})
	var cause error
	done := make(chan error, 1)
	go func() {
		done <- c.Do(bg(), "k", keptTTL, func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			cause = context.Cause(ctx)
			return cause
		}, redlock.WithMaxHold(20*time.Second))
	}()
	<-started
	var err error
	for err == nil {
		select {
		case err = <-done:
		case <-clk.BlockUntil(1):
			clk.Advance(100 * time.Millisecond)
		}
	}
	require.ErrorIs(t, cause, redlock.ErrLockLost)
	require.ErrorIs(t, cause, redlock.ErrMaxHold)
	require.ErrorIs(t, err, redlock.ErrMaxHold)
	require.ErrorIs(t, err, redlock.ErrLockLost)
	assert.ErrorContains(t, err, "held for the maximum of 20s")
}

// A negative cap, or one shorter than the TTL, is refused by the lock
// call, and no node is called.
func TestMaxHoldRefusesBadInput(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	noop := func(context.Context) error { return nil }
	const ttl = 10 * time.Second // node timeout 1s
	kinds := []struct {
		name string
		call func(opts ...redlock.LockOption) error
	}{
		{"TryLock", func(o ...redlock.LockOption) error { return unlockIfHeld(c.TryLock(bg(), "k", ttl, o...)) }},
		{"Lock", func(o ...redlock.LockOption) error { return unlockIfHeld(c.Lock(bg(), "k", ttl, o...)) }},
		{"TryRLock", func(o ...redlock.LockOption) error { return unlockIfHeld(c.TryRLock(bg(), "k", ttl, o...)) }},
		{"RLock", func(o ...redlock.LockOption) error { return unlockIfHeld(c.RLock(bg(), "k", ttl, o...)) }},
		{"TryAcquirePermit", func(o ...redlock.LockOption) error {
			return unlockIfHeld(c.TryAcquirePermit(bg(), "k", 2, ttl, o...))
		}},
		{"AcquirePermit", func(o ...redlock.LockOption) error {
			return unlockIfHeld(c.AcquirePermit(bg(), "k", 2, ttl, o...))
		}},
		{"Do", func(o ...redlock.LockOption) error { return c.Do(bg(), "k", ttl, noop, o...) }},
		{"TryLockAll", func(o ...redlock.LockOption) error {
			return unlockIfHeld(c.TryLockAll(bg(), []string{"a", "b"}, ttl, o...))
		}},
		{"LockAll", func(o ...redlock.LockOption) error {
			return unlockIfHeld(c.LockAll(bg(), []string{"a", "b"}, ttl, o...))
		}},
		{"DoAll", func(o ...redlock.LockOption) error { return c.DoAll(bg(), []string{"a", "b"}, ttl, noop, o...) }},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			err := k.call(redlock.WithAutoExtend(0), redlock.WithMaxHold(-time.Second))
			require.EqualError(t, err, "redlock: max hold must not be negative, got -1s")
			err = k.call(redlock.WithAutoExtend(0), redlock.WithMaxHold(ttl-time.Millisecond))
			require.EqualError(t, err, "redlock: max hold 9.999s is shorter than the ttl 10s: the lock would be held "+
				"past it before any extension; use a max hold of at least the ttl, or a shorter ttl")
		})
	}
	for i, f := range fn.faults {
		assert.Zero(t, f.Calls(), "node %d was called", i)
	}
}

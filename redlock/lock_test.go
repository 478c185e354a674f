package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

func TestExtend(t *testing.T) {
	fn := newFakeNodes(t, 5)
	clk := fakeClock()
	c := newClient(t, fn.pools, redlock.WithTimeSource(clk))
	l, err := c.TryLock(bg(), "k", time.Second)
	require.NoError(t, err)

	clk.Advance(500 * time.Millisecond)
	require.NoError(t, l.Extend(bg(), 2*time.Second))
	c.WaitIdle()
	drift := time.Duration(float64(2*time.Second)*redlock.DefaultDriftFactor) + 2*time.Millisecond
	assert.Equal(t, clk.Now().Add(2*time.Second-drift), l.Until())
	for _, s := range fn.servers {
		assert.Equal(t, 2*time.Second, s.TTL("k"))
	}

	t.Run("after validity", func(t *testing.T) {
		clk.Advance(3 * time.Second) // the keys still exist on the fake nodes
		err := l.Extend(bg(), time.Second)
		require.ErrorIs(t, err, redlock.ErrNotHeld)
		for _, s := range fn.servers {
			assert.Equal(t, 2*time.Second, s.TTL("k"), "an expired lock is never extended")
		}
	})
}

func TestExtendNeverRecreatesExpiredKey(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	c.WaitIdle()
	for _, s := range fn.servers {
		s.Del("k") // expired on every node, but our clock says still valid
	}
	err = l.Extend(bg(), time.Minute)
	require.ErrorIs(t, err, redlock.ErrNotHeld)
	assert.Zero(t, fn.present("k"))
}

func TestExtendWithRepairRecreatesMinorityOnly(t *testing.T) {
	fn := newFakeNodes(t, 5)
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "k", time.Minute, redlock.WithRepairOnExtend())
	require.NoError(t, err)
	c.WaitIdle()
	fn.servers[0].Del("k") // node 0 restarted without persistence
	require.NoError(t, l.Extend(bg(), time.Minute))
	c.WaitIdle()
	assert.Equal(t, 5, fn.holders("k", l.Token()))

	// Healed nodes never make a majority: with 3 keys gone, Extend fails.
	for i := range 3 {
		fn.servers[i].Del("k")
	}
	err = l.Extend(bg(), time.Minute)
	require.ErrorIs(t, err, redlock.ErrNotHeld)
}

func TestExtendUnreachableMajority(t *testing.T) {
	fn := newFakeNodes(t, 3)
	clk := fakeClock()
	c := newClient(t, fn.pools, redlock.WithTimeSource(clk))
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	until := l.Until()
	fn.faults[0].Fail(errDown)
	fn.faults[1].Fail(errDown)
	err = l.Extend(bg(), time.Minute)
	require.ErrorIs(t, err, redlock.ErrNotExtended)
	require.ErrorIs(t, err, errDown)
	assert.Equal(t, until, l.Until(), "a failed extension keeps the old validity")
}

func TestExtendShorterTTLFailureMovesUntilEarlier(t *testing.T) {
	fn := newFakeNodes(t, 3)
	clk := fakeClock()
	c := newClient(t, fn.pools, redlock.WithTimeSource(clk))
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	fn.faults[0].Fail(errDown)
	fn.faults[1].Fail(errDown)
	// Node 2 accepts a 1s TTL (it keeps its longer one: an extension never
	// shortens a key); Until, from the shorter TTL, only moves earlier.
	require.Error(t, l.Extend(bg(), time.Second))
	assert.True(t, l.Until().Before(clk.Now().Add(time.Second)))
}

func TestUnlock(t *testing.T) {
	fn := newFakeNodes(t, 5)
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)

	// A canceled context still releases: the node calls have their own bound.
	ctx, cancel := context.WithCancel(bg())
	cancel()
	require.NoError(t, l.Unlock(ctx))
	c.WaitIdle()
	assert.Zero(t, fn.present("k"))
	require.ErrorIs(t, l.Unlock(bg()), redlock.ErrNotHeld, "a second Unlock")
	require.ErrorIs(t, l.Extend(bg(), time.Minute), redlock.ErrNotHeld, "Extend after Unlock")
}

func TestUnlockWithMinorityDown(t *testing.T) {
	defer parallel(t).idle() // its cleanups wait out the calls to silent nodes
	fn := newFakeNodes(t, 5)
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	c.WaitIdle()
	fn.faults[3].Hang(true)
	fn.faults[4].Fail(errDown)
	require.NoError(t, l.Unlock(bg()))
	assert.Equal(t, 2, fn.present("k"), "unreachable nodes keep their copy until its TTL")
}

func TestUnlockMajorityDown(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	fn.faults[0].Fail(errDown)
	fn.faults[1].Fail(errDown)
	err = l.Unlock(bg())
	require.ErrorIs(t, err, redlock.ErrNotReleased)
	require.ErrorIs(t, err, errDown)
}

func TestUnlockAfterAnotherOwnerTookOver(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	c.WaitIdle()
	for _, s := range fn.servers {
		require.NoError(t, s.Set("k", "other")) // expired, then taken by another
	}
	require.ErrorIs(t, l.Unlock(bg()), redlock.ErrNotHeld)
	assert.Equal(t, 3, fn.holders("k", "other"), "another owner's lock is never released")
}

func TestClosedClient(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c, err := redlock.New(fn.pools)
	require.NoError(t, err)
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	_, err = c.TryLock(bg(), "k2", time.Minute)
	require.ErrorIs(t, err, redlock.ErrClosed)
	_, err = c.Lock(bg(), "k2", time.Minute)
	require.ErrorIs(t, err, redlock.ErrClosed)
	require.ErrorIs(t, l.Unlock(bg()), redlock.ErrClosed)
	require.ErrorIs(t, l.Extend(bg(), time.Minute), redlock.ErrClosed)
}

func TestExtendTellsTakenFromGone(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	c.WaitIdle()
	fn.servers[0].Del("k")
	require.NoError(t, fn.servers[1].Set("k", "other"))
	require.NoError(t, fn.servers[2].Set("k", "other"))
	err = l.Extend(bg(), time.Minute)
	require.ErrorIs(t, err, redlock.ErrNotHeld)
	var qe *redlock.QuorumError
	require.ErrorAs(t, err, &qe)
	causes := map[int]error{}
	for _, n := range qe.Nodes {
		if !errors.Is(n.Err, redlock.ErrPending) { // not answered before the decision
			causes[n.Node] = n.Err
		}
	}
	if e, ok := causes[0]; ok {
		assert.NotErrorIs(t, e, redlock.ErrTaken, "node 0 lost the key")
	}
	for _, i := range []int{1, 2} {
		if e, ok := causes[i]; ok && !errors.Is(e, redlock.ErrPending) {
			assert.ErrorIs(t, e, redlock.ErrTaken, "node %d has another owner", i)
		}
	}
	assert.NotEmpty(t, causes)
}

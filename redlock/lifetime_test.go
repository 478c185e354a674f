package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/redlock"
)

// keptTTL is the TTL of the auto-extended locks here: with newClient's
// node timeout (1s) the loss margin is 2s, and a ttl must hold that plus one
// node timeout.
const keptTTL = 10 * time.Second

// advanceUntilDone moves the fake clock in steps, each time only once the
// keeper is asleep, until done is closed. It returns the fake time at which
// the lock was declared lost.
func advanceUntilDone(t *testing.T, clk *clock.Fake, done <-chan struct{}, step time.Duration) time.Time {
	t.Helper()
	for range 10000 {
		select {
		case <-done:
			return clk.Now()
		case <-clk.BlockUntil(1):
			clk.Advance(step)
		}
	}
	t.Fatal("lock never reported lost")
	return time.Time{}
}

// advanceUntilLostBy is advanceUntilDone for a test whose bound is an
// instant, latest, by which the keeper must have declared the loss: the
// clock moves in steps up to latest and no further, and is held there
// until done is closed, for at most nodeCallBound in real time. A test
// that moved the clock on until done was closed measured its own delay
// too: on a loaded machine its loop advanced several steps between the
// keeper's timer firing and the keeper running (a loss 12ms past the
// bound of margin_test.go, in a make test beside a second run of the
// package). Held at latest, the clock cannot move past the bound while
// the keeper waits for the CPU; a keeper that declares the loss only
// later never does, and the test fails. The node calls' own moves of the
// clock (a fault's Before hook) still move it. It returns the fake time
// at which done was seen closed. The servers in age, if any, are moved on
// (miniredis FastForward) as the clock is, so that their keys age with it.
func advanceUntilLostBy(t *testing.T, clk *clock.Fake, done <-chan struct{}, step time.Duration, latest time.Time, age ...*miniredis.Miniredis) time.Time {
	t.Helper()
	for clk.Now().Before(latest) {
		select {
		case <-done:
			return clk.Now()
		default:
		}
		select {
		case <-done:
			return clk.Now()
		case <-clk.BlockUntil(1):
			d := min(step, latest.Sub(clk.Now()))
			for _, s := range age {
				s.FastForward(d)
			}
			clk.Advance(d)
		}
	}
	select {
	case <-done:
		return clk.Now()
	case <-time.After(nodeCallBound):
		t.Fatalf("the lock was not declared lost by %v: the fake clock was held there (now %v) for %v",
			latest, clk.Now(), nodeCallBound)
		return time.Time{}
	}
}

// waitHolders waits until n nodes hold l: the keeper is running, so
// WaitIdle cannot be used.
func waitHolders(t *testing.T, fn *fakeNodes, l *redlock.Lock, n int) {
	t.Helper()
	// The keeper's calls to the last nodes are on their way (nodeCallBound).
	awaitState(t, nodeCallBound, fmt.Sprintf("%d nodes holding %s", n, l.Key()),
		func() bool { return fn.holders(l.Key(), l.Token()) == n }, onFakes(fn))
}

func TestAutoExtendSchedule(t *testing.T) {
	fn := newFakeNodes(t, 3)
	clk := fakeClock()
	c := newClient(t, fn.pools, redlock.WithTimeSource(clk))
	l, err := c.TryLock(bg(), "k", keptTTL, redlock.WithAutoExtend(time.Second))
	require.NoError(t, err)
	waitHolders(t, fn, l, 3)

	for round := range 3 {
		<-clk.BlockUntil(1) // the keeper sleeps until its next extension
		for _, s := range fn.servers {
			s.SetTTL("k", time.Millisecond) // so we can see the extension
		}
		before := l.Until()
		clk.Advance(time.Second)
		<-clk.BlockUntil(1) // extended, and asleep again
		assert.True(t, l.Until().After(before), "round %d moved Until", round)
		assert.GreaterOrEqual(t, fn.holders("k", l.Token()), 2)
		for _, s := range fn.servers {
			// Read once: a straggler's extension may land between two reads
			// (1 of 10 quiet -cpu 1,2 runs read 1ms, then 10s).
			if ttl := s.TTL("k"); ttl != keptTTL {
				assert.Equal(t, time.Millisecond, ttl, "only a straggler may be late")
			}
		}
		select {
		case <-l.Done():
			t.Fatal("a healthy lock reported lost")
		default:
		}
	}
	require.NoError(t, l.Unlock(bg()))
	<-l.Done()
	require.ErrorIs(t, l.Err(), redlock.ErrNotHeld)
	require.NotErrorIs(t, l.Err(), redlock.ErrLockLost)
}

func TestAutoExtendLossWhenAnotherOwnerTakesOver(t *testing.T) {
	fn := newFakeNodes(t, 3)
	clk := fakeClock()
	c := newClient(t, fn.pools, redlock.WithTimeSource(clk))
	l, err := c.TryLock(bg(), "k", keptTTL, redlock.WithAutoExtend(0))
	require.NoError(t, err)
	waitHolders(t, fn, l, 3) // stragglers landed; none can overwrite the intruder
	require.NoError(t, l.Err())
	for _, s := range fn.servers {
		require.NoError(t, s.Set("k", "intruder"))
	}
	lostAt := advanceUntilDone(t, clk, l.Done(), 100*time.Millisecond)
	assert.True(t, lostAt.Before(l.Until()), "loss reported before validity ends")
	require.ErrorIs(t, l.Err(), redlock.ErrLockLost)
	require.ErrorIs(t, l.Err(), redlock.ErrNotHeld)
	var qe *redlock.QuorumError
	require.ErrorAs(t, l.Err(), &qe, "per-node detail")
	assert.Equal(t, 3, fn.holders("k", "intruder"), "the new owner is untouched")
	require.ErrorIs(t, l.Unlock(bg()), redlock.ErrNotHeld)
}

func TestAutoExtendLossWhenNodesStopAnswering(t *testing.T) {
	fn := newFakeNodes(t, 3)
	clk := fakeClock()
	c := newClient(t, fn.pools, redlock.WithTimeSource(clk))
	l, err := c.TryLock(bg(), "k", keptTTL, redlock.WithAutoExtend(0))
	require.NoError(t, err)
	waitHolders(t, fn, l, 3)
	fn.faults[0].Fail(errDown)
	fn.faults[1].Fail(errDown)
	until := l.Until()
	lostAt := advanceUntilDone(t, clk, l.Done(), 10*time.Millisecond)
	assert.True(t, lostAt.Before(until), "loss at %v, validity ends %v", lostAt, until)
	margin := 2 * time.Second // twice newClient's node timeout
	assert.False(t, lostAt.Before(until.Add(-margin)), "extension was retried until the loss margin: lost at %v, validity ends %v", lostAt, until)
	require.ErrorIs(t, l.Err(), redlock.ErrLockLost)
	require.ErrorIs(t, l.Err(), redlock.ErrNotExtended)
	require.ErrorIs(t, l.Err(), errDown)
}

func TestAutoExtendStarvedKeeperReportsLossOnWake(t *testing.T) {
	fn := newFakeNodes(t, 3)
	clk := fakeClock()
	c := newClient(t, fn.pools, redlock.WithTimeSource(clk))
	l, err := c.TryLock(bg(), "k", keptTTL, redlock.WithAutoExtend(0))
	require.NoError(t, err)
	<-clk.BlockUntil(1)
	calls := fn.faults[0].Calls()
	clk.Advance(3 * keptTTL) // the process was paused past validity
	<-l.Done()
	require.ErrorIs(t, l.Err(), redlock.ErrLockLost)
	c.WaitIdle()
	assert.LessOrEqual(t, fn.faults[0].Calls()-calls, int64(1), "no extension of an expired lock")
}

func TestClientCloseStopsKeeper(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c, err := redlock.New(fn.pools)
	require.NoError(t, err)
	l, err := c.TryLock(bg(), "k", time.Minute, redlock.WithAutoExtend(0))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	<-l.Done()
	require.ErrorIs(t, l.Err(), redlock.ErrLockLost)
	require.ErrorIs(t, l.Err(), redlock.ErrClosed)
}

func TestManualLockHasNoDone(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	assert.Nil(t, l.Done())
	assert.NoError(t, l.Err())
	_, err = c.TryLock(bg(), "k2", time.Minute, redlock.WithAutoExtend(-1))
	require.ErrorContains(t, err, "must not be negative")
}

func TestDoRunsAndReleases(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	leaks := goleak.IgnoreCurrent()
	errWork := errors.New("work failed")
	var ran bool
	err := c.Do(bg(), "k", time.Minute, func(ctx context.Context) error {
		ran = true
		assert.GreaterOrEqual(t, fn.present("k"), 2, "held during fn")
		return errWork
	})
	require.True(t, ran)
	require.ErrorIs(t, err, errWork)
	c.WaitIdle()
	assert.Zero(t, fn.present("k"), "released after fn")
	// New connections to the fake nodes have server-side goroutines; ours
	// (keeper, fan-out calls) must all be gone. The Client's workers wait
	// for its next node call (fanout.Workers) until Close.
	servers := []goleak.Option{leaks,
		goleak.IgnoreAnyFunction("github.com/alicebob/miniredis/v2/server.(*Server).servePeer"),
		goleak.IgnoreAnyFunction("github.com/alicebob/miniredis/v2/server.(*Server).servePeer.func2")}
	goleak.VerifyNone(t, append(servers, goleak.IgnoreTopFunction("github.com/redlockgo/redlock/internal/fanout.(*Workers).run"))...)
	require.NoError(t, c.Close())
	goleak.VerifyNone(t, servers...)
}

func TestDoReleasesOnPanic(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	func() {
		defer func() {
			assert.Equal(t, "boom", recover(), "the panic is re-raised")
		}()
		_ = c.Do(bg(), "k", time.Minute, func(context.Context) error { panic("boom") })
	}()
	c.WaitIdle()
	assert.Zero(t, fn.present("k"), "released before the panic went on")
}

func TestDoCancelsOnLoss(t *testing.T) {
	var cause error
	fn, err := doUntilLost(t, func(ctx context.Context) error {
		cause = context.Cause(ctx)
		return ctx.Err()
	})
	require.ErrorIs(t, cause, redlock.ErrLockLost)
	require.ErrorIs(t, err, redlock.ErrLockLost)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 3, fn.holders("k", "intruder"))
}

func TestDoBadInputAndNotObtained(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	require.ErrorContains(t, c.Do(bg(), "k", time.Minute, nil), "nil function")
	held, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	defer held.Unlock(bg())
	ran := false
	err = c.Do(bg(), "k", time.Minute, func(context.Context) error { ran = true; return nil },
		redlock.WithRetry(redlock.NoRetry()))
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	assert.False(t, ran)
}

// doUntilLost runs Do on a fresh set of nodes with work, taking the lock away
// from it as soon as work starts and moving the fake clock until Do returns.
// work receives fn's context once it is done. It returns the nodes and Do's
// error.
func doUntilLost(t *testing.T, work func(ctx context.Context) error) (*fakeNodes, error) {
	t.Helper()
	fn := newFakeNodes(t, 3)
	clk := fakeClock()
	c := newClient(t, fn.pools, redlock.WithTimeSource(clk))
	started, returned := make(chan struct{}), make(chan struct{})
	driver := make(chan struct{})
	go func() { // the clock's driver, stopped when Do returns
		defer close(driver)
		select {
		case <-started:
		case <-returned:
			return
		}
		for _, s := range fn.servers {
			s.Set("k", "intruder")
		}
		for {
			select {
			case <-returned:
				return
			case <-clk.BlockUntil(1):
				clk.Advance(100 * time.Millisecond)
			}
		}
	}()
	err := c.Do(bg(), "k", keptTTL, func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		return work(ctx)
	})
	close(returned)
	<-driver
	return fn, err
}

func TestDoReportsTheLossOnce(t *testing.T) {
	for name, work := range map[string]func(ctx context.Context) error{
		"cause":         context.Cause,
		"wrapped cause": func(ctx context.Context) error { return fmt.Errorf("billing stopped: %w", context.Cause(ctx)) },
	} {
		t.Run(name, func(t *testing.T) {
			_, err := doUntilLost(t, work)
			require.ErrorIs(t, err, redlock.ErrLockLost)
			require.ErrorIs(t, err, redlock.ErrTaken, "with the per-node detail")
			assert.Equal(t, 1, strings.Count(err.Error(), "lock lost"), "reported once: %v", err)
			assert.Equal(t, 1, strings.Count(err.Error(), "redlock:"), "the prefix once: %v", err)
		})
	}
	t.Run("context error", func(t *testing.T) {
		_, err := doUntilLost(t, func(ctx context.Context) error { return ctx.Err() })
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, redlock.ErrLockLost, "the loss is added to fn's error")
	})
}

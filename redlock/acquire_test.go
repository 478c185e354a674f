package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

var errDown = errors.New("connection refused (injected)")

func TestQuorumMath(t *testing.T) {
	virtual(t)
	for n := 1; n <= 7; n++ {
		quorum := n/2 + 1
		for down := 0; down <= n; down++ {
			t.Run(fmt.Sprintf("N=%d/down=%d", n, down), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					nodes := newBubbleNodes(t, n)
					for i := range down {
						nodes.faults[i].Fail(errDown)
					}
					c := newClient(t, nodes.pools)
					require.Equal(t, quorum, c.Quorum())

					l, err := c.TryLock(t.Context(), "k", 15*time.Second)
					c.WaitIdle() // stragglers answer after TryLock returned
					if n-down >= quorum {
						require.NoError(t, err)
						assert.Equal(t, n-down, nodes.holders(t, "k", l.Token()))
						require.NoError(t, l.Unlock(t.Context()))
						c.WaitIdle()
						assert.Zero(t, nodes.present(t, "k"))
						return
					}
					require.ErrorIs(t, err, redlock.ErrNotObtained)
					require.ErrorIs(t, err, errDown)
					var qe *redlock.QuorumError
					require.ErrorAs(t, err, &qe)
					assert.Equal(t, quorum, qe.Needed)
					assert.Equal(t, n, qe.Total)
					assert.Zero(t, nodes.present(t, "k"), "a failed attempt must leave nothing behind")
				})
			})
		}
	}
}

func TestSecondOwnerRefusedWithTakenDetail(t *testing.T) {
	fn := newFakeNodes(t, 5)
	a := newClient(t, fn.pools)
	b := newClient(t, fn.pools)

	la, err := a.TryLock(bg(), "k", time.Second)
	require.NoError(t, err)
	a.WaitIdle() // else b could win a node whose SET from a is still in flight
	_, err = b.TryLock(bg(), "k", time.Second)
	b.WaitIdle()
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrTaken)
	var ne *redlock.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Contains(t, fn.servers[ne.Node].Addr(), ne.Addr)
	assert.Equal(t, 5, fn.holders("k", la.Token()), "the refused attempt must not touch the holder's keys")
}

func TestFailedAttemptReleasesOnlyItsOwnKeys(t *testing.T) {
	fn := newFakeNodes(t, 5)
	// A foreign owner holds nodes 0-2; we can only win nodes 3 and 4.
	for i := range 3 {
		require.NoError(t, fn.servers[i].Set("k", "foreign"))
		fn.servers[i].SetTTL("k", time.Minute)
	}
	c := newClient(t, fn.pools)
	_, err := c.TryLock(bg(), "k", time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	c.WaitIdle()
	assert.Equal(t, 3, fn.holders("k", "foreign"))
	assert.Equal(t, 3, fn.present("k"), "our copies on nodes 3 and 4 are released")
	for i := range 3 {
		assert.Equal(t, time.Minute, fn.servers[i].TTL("k"))
	}
}

func TestSlowNodeDoesNotDelayDecision(t *testing.T) {
	fn := newFakeNodes(t, 5)
	release := fn.faults[4].Hold() // node 4 answers only when we say so
	defer release()
	c := newClient(t, fn.pools, redlock.WithNodeTimeout(redlock.NodeTimeoutLimit))

	// If TryLock waited for node 4 it would return only at the node
	// timeout (the gate stays shut until then), the longest one allowed,
	// with that much less validity.
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	assert.Greater(t, time.Until(l.Until()), time.Minute-redlock.NodeTimeoutLimit, "decided at the majority, not at the node timeout")
	require.NoError(t, l.Unlock(bg()))

	// The straggler's SET lands after Unlock: the Client releases it.
	release()
	require.NoError(t, c.Close())
	assert.Zero(t, fn.present("k"), "a late SET after Unlock must be released")
}

func TestStragglerOfFailedAttemptIsReleased(t *testing.T) {
	fn := newFakeNodes(t, 3)
	fn.faults[0].Fail(errDown)
	fn.faults[1].Fail(errDown)
	release := fn.faults[2].Hold()
	c := newClient(t, fn.pools, redlock.WithNodeTimeout(redlock.NodeTimeoutLimit))

	_, err := c.TryLock(bg(), "k", time.Minute)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	release() // node 2's SET now lands, after the attempt failed
	require.NoError(t, c.Close())
	assert.Zero(t, fn.present("k"), "a late SET of a failed attempt must be released")
}

func TestTimedOutNodeIsReleasedOnFailure(t *testing.T) {
	fn := newFakeNodes(t, 3)
	fn.faults[0].Fail(errDown)
	fn.faults[1].Fail(errDown)
	// Node 2 applies the SET but its reply comes after the node timeout:
	// the call is held until TryLock has returned without it.
	release := fn.faults[2].Hold()
	c := newClient(t, fn.pools, redlock.WithNodeTimeout(20*time.Millisecond))

	_, err := c.TryLock(bg(), "k", time.Minute)
	release()
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.NoError(t, c.Close())
	assert.Zero(t, fn.present("k"))
}

func TestValidityBoundary(t *testing.T) {
	const ttl = time.Second
	drift := time.Duration(float64(ttl)*redlock.DefaultDriftFactor) + 2*time.Millisecond
	for _, tc := range []struct {
		name    string
		elapsed time.Duration
		ok      bool
	}{
		{"no time spent", 0, true},
		{"just inside", ttl - drift - time.Nanosecond, true},
		{"validity exactly used up", ttl - drift, false},
		{"past the TTL", 2 * ttl, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fn := newFakeNodes(t, 5)
			clk := fakeClock()
			// The first node call, whichever it is, moves the clock: time
			// spent acquiring, before any node has answered.
			var once sync.Once
			for _, f := range fn.faults {
				f.Before(func(op string) {
					if op == "eval" { // the acquisition, first
						once.Do(func() { clk.Advance(tc.elapsed) })
					}
				})
			}
			c := newClient(t, fn.pools, redlock.WithTimeSource(clk))
			start := clk.Now()
			l, err := c.TryLock(bg(), "k", ttl)
			c.WaitIdle()
			if !tc.ok {
				require.ErrorIs(t, err, redlock.ErrNotObtained)
				assert.Contains(t, err.Error(), "validity used up")
				assert.Zero(t, fn.present("k"), "a lock without validity is released everywhere")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, start.Add(ttl-drift), l.Until())
		})
	}
}

func TestContextEndsLock(t *testing.T) {
	fn := newFakeNodes(t, 3)
	holder := newClient(t, fn.pools)
	_, err := holder.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	c := newClient(t, fn.pools)

	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(bg(), 30*time.Millisecond)
		defer cancel()
		_, err := c.Lock(ctx, "k", time.Second)
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("canceled before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(bg())
		cancel()
		_, err := c.Lock(ctx, "k", time.Second)
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, context.Canceled)
		_, err = c.TryLock(ctx, "other", time.Second)
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, context.Canceled)
	})
}

func TestLockRetriesUntilReleased(t *testing.T) {
	fn := newFakeNodes(t, 3)
	clk := fakeClock()
	c := newClient(t, fn.pools, redlock.WithTimeSource(clk))
	held, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)

	got := make(chan error, 1)
	go func() {
		l, err := c.Lock(bg(), "k", time.Minute, redlock.WithRetry(redlock.ConstantBackoff(time.Second)))
		if err == nil {
			err = l.Unlock(bg())
		}
		got <- err
	}()
	<-clk.BlockUntil(1) // the waiter failed once and sleeps
	require.NoError(t, held.Unlock(bg()))
	clk.Advance(time.Second)
	require.NoError(t, <-got)
}

func TestRetryStrategyStops(t *testing.T) {
	fn := newFakeNodes(t, 3)
	observe, attempts := attemptsOf()
	c := newClient(t, fn.pools, observe)
	_, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	<-attempts
	_, err = c.Lock(bg(), "k", time.Minute, redlock.WithRetry(redlock.LimitRetry(redlock.ConstantBackoff(time.Millisecond), 2)))
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	assert.Equal(t, 3, <-attempts, "LimitRetry(s, 2) makes three attempts")
	_, err = c.Lock(bg(), "k", time.Minute, redlock.WithRetry(redlock.NoRetry()))
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	assert.Equal(t, 1, <-attempts, "NoRetry makes one")
}

func TestEachAttemptHasItsOwnToken(t *testing.T) {
	parallel(t)
	fn := newFakeNodes(t, 3)
	// Every node answers at once: no wait here depends on the node
	// timeout, which only has to outlast a loaded machine's stall (all three
	// nodes missed a 1s one in a quiet -cpu 1,2 run), as in TestQuorumMath.
	c := newClient(t, fn.pools, redlock.WithNodeTimeout(5*time.Second))
	seen := map[string]bool{}
	for range 20 {
		l, err := c.TryLock(bg(), "k", time.Minute)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, len(l.Token()), 22, "at least 128 bits of randomness")
		assert.False(t, seen[l.Token()])
		seen[l.Token()] = true
		require.NoError(t, l.Unlock(bg()))
	}
}

// The cleanup of a failed attempt runs in the background: a TryLock that
// fails because a majority hangs returns after its node timeout, while the
// calls of its cleanup to those nodes are still held (they cannot end before
// the test lets them), instead of after a second wait for the cleanup.
func TestFailedTryLockDoesNotWaitForItsCleanup(t *testing.T) {
	defer parallel(t).idle() // its cleanups wait out the calls to silent nodes
	fn := newFakeNodes(t, 3)
	const nodeTimeout = 500 * time.Millisecond
	c := newClient(t, fn.pools, redlock.WithNodeTimeout(nodeTimeout))
	// Held calls wait for the gate whatever their context says: the cleanup's
	// releases on nodes 1 and 2 cannot end until open is called.
	open1, open2 := fn.faults[1].Hold(), fn.faults[2].Hold()
	t.Cleanup(func() { open1(); open2() })
	done := make(chan error, 1)
	go func() {
		_, err := c.TryLock(bg(), "k", time.Minute)
		done <- err
	}()
	// The bound is the node timeout's, with room for a loaded machine: a
	// TryLock that waited for its cleanup would not return before the gates
	// open, however long that is.
	const bound = 10 * nodeTimeout
	select {
	case err := <-done:
		require.ErrorIs(t, err, redlock.ErrNotObtained)
	case <-time.After(bound):
		t.Fatalf("TryLock did not return within %v (node timeout %v) while its cleanup's calls to nodes 1 and 2 were held: it waits for the cleanup", bound, nodeTimeout)
	}
	open1()
	open2()
	c.WaitIdle()
	assert.False(t, fn.servers[0].Exists("k"), "the cleanup released node 0")
}

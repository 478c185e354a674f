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

// A hand-over that misses its majority cleans up the waiter's token and lets
// the waiter try the usual way; the Unlock reports what happened to its own
// release. Node 0 hands the key over; nodes 1 and 2 fail, before node 0
// answers (its answer comes after the decision) or after it.
func TestFailedHandOverFallsBackToAnAttempt(t *testing.T) {
	for _, tc := range []struct {
		name      string
		failAfter time.Duration
	}{{"handed node answers late", 0}, {"handed node answers first", 30 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) { testFailedHandOver(t, tc.failAfter) })
	}
}

func testFailedHandOver(t *testing.T, failAfter time.Duration) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools, redlock.WithNodeTimeout(200*time.Millisecond))
	h, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)

	// The first waiter holds the lock until told to unlock; the second
	// parks behind it.
	held := make(chan *redlock.Lock, 1)
	go func() {
		l, err := c.Lock(bg(), "k", 400*time.Millisecond, never)
		if assert.NoError(t, err) {
			held <- l
		}
	}()
	waitSubscribed(t, fn, "k", 1)
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(bg(), 30*time.Second)
	defer cancel()
	second := make(chan error, 1)
	go func() {
		l, err := c.Lock(ctx, "k", time.Minute, redlock.WithRetry(redlock.ConstantBackoff(50*time.Millisecond)))
		if err == nil {
			err = l.Unlock(bg())
		}
		second <- err
	}()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, h.Unlock(bg()))
	first := <-held // the second waiter is parked now

	down := errors.New("node down")
	for _, f := range fn.faults[1:] {
		f.Fail(down)
		f.Before(func(string) { time.Sleep(failAfter) })
	}
	err = first.Unlock(bg())
	require.ErrorIs(t, err, redlock.ErrNotReleased, "only node 0 released")

	for _, f := range fn.faults[1:] {
		f.Fail(nil)
		f.Before(nil)
	}
	for _, s := range fn.servers[1:] {
		s.FastForward(time.Second) // the first waiter's copies expire there
	}
	require.NoError(t, <-second, "the second waiter gets the lock the usual way")
	c.WaitIdle()
	for i, s := range fn.servers {
		assert.False(t, s.Exists("k"), "node %d: nothing left behind, not even the token handed over on node 0", i)
	}
}

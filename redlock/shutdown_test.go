package redlock_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

func TestShutdownReportsReleasesThatFailed(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools, redlock.WithNodeTimeout(50*time.Millisecond))
	_, err := c.TryLock(bg(), "a", time.Minute)
	require.NoError(t, err)
	gone, err := c.TryLock(bg(), "b", time.Minute)
	require.NoError(t, err)
	c.WaitIdle()
	for _, s := range fn.servers {
		s.Del("b") // expired on the nodes: not Shutdown's failure
	}
	fn.faults[0].Fail(errDown)
	fn.faults[1].Hang(true)

	err = c.Shutdown(bg())
	require.ErrorIs(t, err, redlock.ErrNotReleased)
	require.ErrorIs(t, err, errDown)
	require.ErrorIs(t, err, redlock.ErrNodeTimeout)
	require.NotErrorIs(t, err, redlock.ErrNotHeld, "lock b had expired: not an error")
	assert.Equal(t, 2, fn.present("a"), "node 2 released it; nodes 0 and 1 did not answer")
	require.ErrorIs(t, gone.Unlock(bg()), redlock.ErrClosed)
}

func TestShutdownReleasesLocksObtainedByCallsInFlight(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	open0, open1 := fn.faults[0].Hold(), fn.faults[1].Hold()
	arrived := make(chan struct{}, 1)
	fn.faults[0].Before(func(string) {
		select {
		case arrived <- struct{}{}:
		default:
		}
	})
	inflight := make(chan error, 1)
	go func() { // joined through inflight
		_, err := c.TryLock(bg(), "k", time.Minute)
		inflight <- err
	}()
	<-arrived // the acquisition is in flight, held at node 0
	shutdown := make(chan error, 1)
	go func() { shutdown <- c.Shutdown(bg()) }() // joined through shutdown
	// Shutdown has begun once new acquisitions are refused. The probe's ttl
	// is invalid, so that it never reaches the held nodes: it is refused
	// for that until Shutdown refuses it first.
	// Refusing is Shutdown's first step, once its goroutine runs: 5s, for
	// a loaded machine's scheduler.
	redistest.WaitFor(t, 5*time.Second, "Shutdown to refuse a new TryLock", func() (bool, string) {
		_, err := c.TryLock(bg(), "probe", 0)
		return errors.Is(err, redlock.ErrClosed), fmt.Sprint(err)
	})
	open0()
	open1()
	require.NoError(t, <-shutdown)
	require.NoError(t, <-inflight, "the call in flight obtained its lock")
	assert.Zero(t, fn.present("k"), "and Shutdown released it")
}

func TestShutdownAfterCloseStillReleases(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	_, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	c.WaitIdle()
	assert.Equal(t, 3, fn.present("k"), "Close leaves locks to their TTL")
	require.NoError(t, c.Shutdown(bg()))
	assert.Zero(t, fn.present("k"))
	var nilClient *redlock.Client
	require.ErrorContains(t, nilClient.Shutdown(bg()), "nil client")
}

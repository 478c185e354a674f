package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

// After Shutdown, another Client gets every key the first one held at once,
// on real redis-server processes, with one node down: manual locks, locks
// kept alive, and Do's. Do's fn is told why before its lock is released.
func TestRealShutdownReleasesEverythingHeld(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	servers[4].Kill() // a minority down does not stop the releases
	a := newClient(t, pools)
	b := newClient(t, pools)
	const ttl = time.Minute // without Shutdown, b would wait this long

	manual, err := a.TryLock(bg(), "manual", ttl)
	require.NoError(t, err)
	kept, err := a.Lock(bg(), "kept", ttl, redlock.WithAutoExtend(0))
	require.NoError(t, err)
	running := make(chan struct{})
	doErr, cause := make(chan error, 1), make(chan error, 1)
	go func() { // joined below through doErr
		doErr <- a.Do(bg(), "do", ttl, func(ctx context.Context) error {
			close(running)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return context.Cause(ctx)
		})
	}()
	<-running
	held, err := b.TryLock(bg(), "wanted", ttl)
	require.NoError(t, err)
	waiting := make(chan error, 1)
	go func() { // a caller of a waiting in Lock: Shutdown ends its wait
		_, err := a.Lock(bg(), "wanted", ttl)
		waiting <- err
	}()

	require.NoError(t, a.Shutdown(bg()))

	require.ErrorIs(t, <-cause, redlock.ErrLockLost, "fn learns why its context ended")
	require.ErrorIs(t, <-doErr, redlock.ErrClosed)
	require.ErrorIs(t, <-waiting, redlock.ErrClosed)
	for _, key := range []string{"manual", "kept", "do"} {
		l, err := b.TryLock(bg(), key, ttl) // one attempt: the key must be free now
		require.NoError(t, err, "%s released by Shutdown", key)
		require.NoError(t, l.Unlock(bg()))
	}
	require.NoError(t, held.Unlock(bg()), "the other Client's lock is untouched")

	_, err = a.TryLock(bg(), "other", ttl)
	require.ErrorIs(t, err, redlock.ErrClosed)
	require.ErrorIs(t, manual.Unlock(bg()), redlock.ErrClosed)
	<-kept.Done()
	require.ErrorIs(t, kept.Err(), redlock.ErrLockLost)
	require.NoError(t, a.Shutdown(bg()), "a second Shutdown has nothing left to do")
	require.NoError(t, a.Close())
}

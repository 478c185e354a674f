package redlock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

// Lock waits out the lock-delay of a holder that vanished (its key on
// every node, never released) and gets the key within a second after the
// delay ends, not before. In a synctest bubble: the second is for a Lock's
// retries, which no load moves.
func TestLockDelayLockWaits(t *testing.T) {
	virtual(t)
	synctest.Test(t, func(t *testing.T) {
		const ttl, delay = time.Second, 1500 * time.Millisecond
		nodes := newBubbleNodes(t, 5)
		a := newClient(t, nodes.pools, redlock.WithLockDelay(delay))
		start := time.Now()
		la, err := a.TryLock(t.Context(), "res", ttl)
		require.NoError(t, err)
		a.WaitIdle()
		require.Equal(t, 5, nodes.holders(t, "res", la.Token()), "A's lock on every node")
		b := newClient(t, nodes.pools, redlock.WithLockDelay(delay))

		lb, err := b.Lock(t.Context(), "res", ttl)
		require.NoError(t, err)
		got := time.Now()
		ends := start.Add(ttl + delay)
		assert.False(t, got.Before(ends), "B got the lock %v after A's acquisition, before ttl+delay", got.Sub(start))
		assert.Less(t, got.Sub(ends), time.Second, "B got the lock too long after the delay ended")
		require.NoError(t, lb.Unlock(t.Context()))
	})
}

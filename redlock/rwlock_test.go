package redlock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

var zcardScript = pool.NewScript(`return redis.call('ZCARD', KEYS[1])`)

// readers counts key's readers on each node, past the nodes' faults.
func (b *bubbleNodes) readers(t *testing.T, key string) []int64 {
	t.Helper()
	out := make([]int64, len(b.faults))
	for i, f := range b.faults {
		n, err := f.Pool.Eval(t.Context(), zcardScript, []string{readersKey(key)})
		require.NoError(t, err)
		out[i] = n.(int64)
	}
	return out
}

// A reader that is never extended nor released expires on its own while
// another reader of the key is extended; and a writer waiting behind a dead
// reader alone gets the key once the reader's TTL ran out. In a synctest
// bubble: the live reader's extensions and the wait past the dead one's
// TTL are on the virtual clock.
func TestDeadReaderExpiresOnItsOwn(t *testing.T) {
	virtual(t)
	synctest.Test(t, func(t *testing.T) {
		nodes := newBubbleNodes(t, 5)
		const deadTTL = time.Second
		c := newClient(t, nodes.pools, redlock.WithNodeTimeout(250*time.Millisecond))
		dead, err := c.TryRLock(t.Context(), "doc", deadTTL) // never extended nor released
		require.NoError(t, err)
		live, err := c.TryRLock(t.Context(), "doc", 10*time.Second)
		require.NoError(t, err)
		c.WaitIdle()
		set := time.Now() // every copy of the dead reader was set before now
		// The live reader extends only itself: once while the dead one is
		// still on the nodes, once past its TTL, which drops the expired
		// entry on each node.
		require.NoError(t, live.Extend(t.Context(), 10*time.Second))
		time.Sleep(time.Until(set.Add(deadTTL + time.Millisecond)))
		require.NoError(t, live.Extend(t.Context(), 10*time.Second))
		c.WaitIdle()
		require.ErrorIs(t, dead.Extend(t.Context(), time.Second), redlock.ErrNotHeld)
		for _, n := range nodes.readers(t, "doc") {
			assert.Equal(t, int64(1), n, "the dead reader's lease ran out while the live one was extended")
		}
		require.NoError(t, live.Unlock(t.Context()))

		// A dead reader alone: a waiting writer gets the key once its TTL ran out.
		_, err = c.TryRLock(t.Context(), "doc", deadTTL)
		require.NoError(t, err)
		start := time.Now()
		w, err := c.Lock(t.Context(), "doc", 10*time.Second)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(start), deadTTL-10*time.Millisecond, "the writer waited for the dead reader's TTL")
		require.NoError(t, w.Unlock(t.Context()))
	})
}

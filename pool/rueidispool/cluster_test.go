package rueidispool_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/pool/rueidispool"
	"github.com/redlockgo/redlock/redlock"
)

// TestClusterNodes runs the lock over three Redis Clusters of two masters,
// each through a rueidis client in cluster mode: fenced and fair locks,
// fenced readers, permits and multi-locks on keys with and without hash
// tags, and a waiter in another Client woken by the release (through the
// cluster's PUBLISH) within a second.
func TestClusterNodes(t *testing.T) {
	pools := make([]pool.Pool, 3)
	clients := make([]rueidis.Client, 3)
	for i, c := range redistest.StartClusters(t, 3, 2, redistest.NoPersistence) {
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: c.Addrs(), DisableCache: true})
		require.NoError(t, err)
		t.Cleanup(rc.Close)
		pools[i], clients[i] = rueidispool.New(rc), rc
		require.True(t, pools[i].(pool.Cluster).IsCluster())
	}
	newLockClient := func() *redlock.Client {
		c, err := redlock.New(pools)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, c.Close()) })
		return c
	}
	a, b := newLockClient(), newLockClient()
	for _, key := range []string{"res:1", "{orders}:1", "a}b"} {
		l, err := a.TryLock(bg(), key, 10*time.Second, redlock.WithFencing())
		require.NoError(t, err, key)
		require.Positive(t, l.Fence())
		require.NoError(t, l.Unlock(bg()))
		requireFamily(t, a, b, key)

		l, err = a.TryLock(bg(), key, 10*time.Second, redlock.WithFairness())
		require.NoError(t, err, key)
		type outcome struct {
			l   *redlock.Lock
			err error
			at  time.Time
		}
		got := make(chan outcome, 1)
		go func() {
			ctx, cancel := context.WithTimeout(bg(), 20*time.Second)
			defer cancel()
			l, err := b.Lock(ctx, key, 10*time.Second, redlock.WithRetry(redlock.ConstantBackoff(30*time.Second)))
			got <- outcome{l, err, time.Now()}
		}()
		require.Eventually(t, func() bool { // b queued wherever a holds the key
			for _, rc := range clients {
				v, _ := rc.Do(bg(), rc.B().Get().Key(key).Build()).ToString()
				n, _ := rc.Do(bg(), rc.B().Zcard().Key(keyslot.Companion(key, "queue")).Build()).AsInt64()
				if v == l.Token() && n < 1 {
					return false
				}
			}
			return true
		}, 10*time.Second, 5*time.Millisecond)
		released := time.Now()
		require.NoError(t, l.Unlock(bg()))
		o := <-got
		require.NoError(t, o.err, key)
		assert.Less(t, o.at.Sub(released), time.Second, "%q: woken %v after the release", key, o.at.Sub(released))
		require.NoError(t, o.l.Unlock(bg()))
	}
}

// requireFamily takes a fenced reader, permit and multi-lock of key on a and
// checks that b is excluded where it must be; the fences grow.
func requireFamily(t *testing.T, a, b *redlock.Client, key string) {
	t.Helper()
	r, err := a.TryRLock(bg(), key, 10*time.Second, redlock.WithFencing())
	require.NoError(t, err, key)
	_, err = b.TryLock(bg(), key, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained, "%q: a reader excludes a writer", key)
	require.NoError(t, r.Unlock(bg()))

	m, err := a.TryLockAll(bg(), []string{key}, 10*time.Second, redlock.WithFencing())
	require.NoError(t, err, key)
	assert.Greater(t, m.Fence(), r.Fence(), key)
	require.NoError(t, m.Unlock(bg()))

	sem := key + ":sem"
	p, err := a.TryAcquirePermit(bg(), sem, 1, 10*time.Second, redlock.WithFencing())
	require.NoError(t, err, sem)
	require.Positive(t, p.Fence())
	_, err = b.TryAcquirePermit(bg(), sem, 1, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained, "%q: one permit", sem)
	require.NoError(t, p.Unlock(bg()))
}

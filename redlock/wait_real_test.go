package redlock_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

func TestRealReleaseWakesWaiter(t *testing.T) {
	servers, pools := realNodes(t, 5)
	holder := newClient(t, pools)
	waiter := newClient(t, pools)
	l, err := holder.TryLock(bg(), "res", time.Minute)
	require.NoError(t, err)
	got := lockAsync(waiter, "res", never)
	require.Eventually(t, func() bool {
		n := servers[0].Client(t).PubSubNumSub(bg(), redlock.ReleaseChannel("res")).Val()
		return n[redlock.ReleaseChannel("res")] == 1
	}, 10*time.Second, time.Millisecond)
	require.NoError(t, l.Unlock(bg()))
	require.NoError(t, <-got, "only the release message can wake a waiter whose backoff is an hour")
}

func TestRealSixteenContendersAllGetTheLock(t *testing.T) {
	_, pools := realNodes(t, 5)
	clients := []*redlock.Client{newClient(t, pools), newClient(t, pools), newClient(t, pools), newClient(t, pools)}
	var (
		mu    sync.Mutex
		waits []time.Duration
		wg    sync.WaitGroup
		held  sync.Mutex // fails the test (TryLock) if two hold at once
	)
	const rounds = 5
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[g%len(clients)]
			for range rounds {
				ctx, cancel := context.WithTimeout(bg(), 60*time.Second)
				start := time.Now()
				l, err := c.Lock(ctx, "hot", 10*time.Second)
				cancel()
				if !assert.NoError(t, err, "every contender gets the lock") {
					return
				}
				if !assert.True(t, held.TryLock(), "two holders at once") {
					return
				}
				mu.Lock()
				waits = append(waits, time.Since(start))
				mu.Unlock()
				time.Sleep(time.Millisecond)
				held.Unlock()
				assert.NoError(t, l.Unlock(bg()))
			}
		}()
	}
	wg.Wait()
	require.Len(t, waits, 16*rounds)
	slices.Sort(waits)
	t.Logf("16 contenders x %d rounds: wait p50 %v, p99 %v, max %v", rounds,
		waits[len(waits)/2], waits[len(waits)*99/100], waits[len(waits)-1])
}

// An expiry publishes nothing: the waiter's backoff, not a message, ends the
// wait, within the backoff's bound after the key expired.
func TestRealExpiryWithoutMessageStillEndsInAcquisition(t *testing.T) {
	_, pools := realNodes(t, 5)
	holder := newClient(t, pools)
	waiter := newClient(t, pools)
	_, err := holder.TryLock(bg(), "res", 300*time.Millisecond) // never unlocked
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
	defer cancel()
	start := time.Now()
	l, err := waiter.Lock(ctx, "res", time.Minute)
	require.NoError(t, err, "the backoff retries after the holder's key expired")
	t.Logf("acquired %v after the holder's 300ms lock; the default backoff's bound is 100ms", time.Since(start))
	require.NoError(t, l.Unlock(bg()))
}

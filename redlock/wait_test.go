package redlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

// never is a retry strategy whose backoff is so long that only a wake-up can
// end a wait within a test.
var never = redlock.WithRetry(redlock.ConstantBackoff(time.Hour))

// lockAsync runs c.Lock in a goroutine and delivers the result.
func lockAsync(c *redlock.Client, key string, opts ...redlock.LockOption) <-chan error {
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg(), 30*time.Second)
		defer cancel()
		l, err := c.Lock(ctx, key, time.Minute, opts...)
		if err == nil {
			err = l.Unlock(bg())
		}
		got <- err
	}()
	return got
}

// waitSubscribed waits until every node has n subscribers on key's channel.
func waitSubscribed(t *testing.T, fn *fakeNodes, key string, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, s := range fn.servers {
			if s.PubSubNumSub(redlock.ReleaseChannel(key))[redlock.ReleaseChannel(key)] != n {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond)
}

func TestReleaseWakesWaiterOfAnotherClient(t *testing.T) {
	fn := newFakeNodes(t, 3)
	holder := newClient(t, fn.pools)
	waiter := newClient(t, fn.pools)
	l, err := holder.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)

	got := lockAsync(waiter, "k", never)
	waitSubscribed(t, fn, "k", 1)
	require.NoError(t, l.Unlock(bg()))
	require.NoError(t, <-got, "woken by the release message, not by the hour-long backoff")
	waitSubscribed(t, fn, "k", 0) // the waiter left no subscription behind
}

func TestLostNotificationFallsBackToBackoff(t *testing.T) {
	fn := newFakeNodes(t, 3)
	clk := fakeClock()
	holder := newClient(t, fn.pools)
	waiter := newClient(t, fn.pools, redlock.WithClock(clk))
	for _, f := range fn.faults {
		f.Mute(true) // every release message is lost
	}
	l, err := holder.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	got := lockAsync(waiter, "k", redlock.WithRetry(redlock.ConstantBackoff(time.Second)))
	<-clk.BlockUntil(1) // the waiter sleeps on its backoff
	waitSubscribed(t, fn, "k", 1)
	require.NoError(t, l.Unlock(bg()))
	select {
	case err := <-got:
		t.Fatalf("woken without a message: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	clk.Advance(time.Second) // the backoff ends: the waiter retries and wins
	require.NoError(t, <-got)
}

func TestWaitersOfOneClientAreServedInOrder(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)

	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(bg(), 30*time.Second)
			defer cancel()
			l, err := c.Lock(ctx, "k", time.Minute, never)
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			assert.NoError(t, l.Unlock(bg()))
		}()
		// Let waiter i queue before waiter i+1 arrives.
		waitSubscribed(t, fn, "k", 1)
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, l.Unlock(bg()))
	wg.Wait()
	assert.Equal(t, []int{0, 1, 2, 3, 4}, order, "first come, first served within a Client")
}

func TestReleaseWakesOneWaiterPerClient(t *testing.T) {
	fn := newFakeNodes(t, 3)
	holder := newClient(t, fn.pools)
	c := newClient(t, fn.pools)
	l, err := holder.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)

	var results []<-chan error
	for range 10 {
		results = append(results, lockAsync(c, "k", never))
	}
	waitSubscribed(t, fn, "k", 1) // one subscription per node for all ten
	time.Sleep(50 * time.Millisecond)
	before := fn.faults[0].Calls()
	require.NoError(t, l.Unlock(bg()))
	for _, r := range results {
		require.NoError(t, <-r)
	}
	// Ideally node 0 sees the holder's release, then one acquisition and one
	// release per waiter: 21 calls. An attempt can still race a release that
	// is in flight on a slow node, so allow one extra call per waiter. A herd
	// (every waiter retrying on every release) would cost over 100.
	calls := fn.faults[0].Calls() - before
	t.Logf("node 0 calls during the ten hand-offs: %d", calls)
	assert.LessOrEqual(t, calls, int64(1+10*2+10), "a release wakes one waiter, not ten")
}

func TestGivingUpLeavesNothingBehind(t *testing.T) {
	fn := newFakeNodes(t, 3)
	holder := newClient(t, fn.pools)
	c := newClient(t, fn.pools)
	l, err := holder.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(bg(), 100*time.Millisecond)
	defer cancel()
	_, err = c.Lock(ctx, "k", time.Minute, never)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	waitSubscribed(t, fn, "k", 0)

	// A later waiter still works: nothing stale blocks the queue.
	got := lockAsync(c, "k", never)
	waitSubscribed(t, fn, "k", 1)
	require.NoError(t, l.Unlock(bg()))
	require.NoError(t, <-got)
}

func TestCloseEndsWaiters(t *testing.T) {
	fn := newFakeNodes(t, 3)
	holder := newClient(t, fn.pools)
	l, err := holder.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	defer l.Unlock(bg())
	c, err := redlock.New(fn.pools)
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		_, err := c.Lock(bg(), "k", time.Minute, never) // no deadline: only Close ends it
		got <- err
	}()
	waitSubscribed(t, fn, "k", 1)
	require.NoError(t, c.Close())
	err = <-got
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrClosed)
}

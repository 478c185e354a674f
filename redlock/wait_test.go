package redlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
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

func TestRelockWaitsForOwnDeleteOnEachNode(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	c.WaitIdle()

	slow := fn.faults[2]
	release := slow.Hold() // node 2's delete is still on its way when Unlock returns
	require.NoError(t, l.Unlock(bg()))
	calls := slow.Calls()
	l2, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err, "nodes 0 and 1 are a majority")
	assert.Equal(t, calls, slow.Calls(), "the new SET to node 2 waits for the delete before it")

	release()
	c.WaitIdle()
	got, err := fn.servers[2].Get("k")
	require.NoError(t, err)
	assert.Equal(t, l2.Token(), got, "node 2 deleted the old token, then took the new one")
	require.NoError(t, l2.Unlock(bg()))
}

func TestFailedReleaseStillWakesOwnWaiter(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	var attempts sync.WaitGroup
	attempts.Add(1)
	var once sync.Once
	got := lockAsync(c, "k", never)
	waitSubscribed(t, fn, "k", 1)
	time.Sleep(20 * time.Millisecond) // the waiter's first attempt has failed; it sleeps an hour

	down := errors.New("node down")
	for _, f := range fn.faults {
		f.Mute(true) // node 0's release message must not be what wakes it
	}
	fn.faults[1].Fail(down)
	fn.faults[2].Fail(down)
	fn.faults[0].Before(func(op string) {
		if op == "setnx" {
			once.Do(attempts.Done)
		}
	})
	require.ErrorIs(t, l.Unlock(bg()), redlock.ErrNotReleased)
	attempts.Wait() // the failed release woke the waiter: it tried again at once

	fn.faults[1].Fail(nil)
	fn.faults[2].Fail(nil)
	for _, s := range fn.servers[1:] {
		s.Del("k") // as if the release had landed after all
	}
	fn.faults[0].Before(nil)
	for i, f := range fn.faults {
		f.Mute(false)
		fn.servers[i].Publish(redlock.ReleaseChannel("k"), "another client")
	}
	require.NoError(t, <-got)
}

func TestWaiterWakesOnceAMajorityAnnouncedRelease(t *testing.T) {
	fn := newFakeNodes(t, 3)
	holder := newClient(t, fn.pools)
	c := newClient(t, fn.pools)
	l, err := holder.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	got := lockAsync(c, "k", never)
	waitSubscribed(t, fn, "k", 1)
	time.Sleep(20 * time.Millisecond) // its first attempt has failed; it sleeps an hour

	var attempts atomic.Int32
	fn.faults[0].Before(func(op string) {
		if op == "setnx" {
			attempts.Add(1)
		}
	})
	ch := redlock.ReleaseChannel("k")
	fn.servers[0].Publish(ch, "x") // one node of three: the others may still hold the key
	time.Sleep(50 * time.Millisecond)
	assert.Zero(t, attempts.Load(), "a minority's announcement woke the waiter")
	fn.servers[1].Publish(ch, "x") // now two of three
	require.Eventually(t, func() bool { return attempts.Load() > 0 }, 10*time.Second, time.Millisecond)

	require.NoError(t, l.Unlock(bg()))
	require.NoError(t, <-got)
}

// setnxCounter counts the SET NX calls reaching node i.
func setnxCounter(fn *fakeNodes, i int) *atomic.Int32 {
	var n atomic.Int32
	fn.faults[i].Before(func(op string) {
		if op == "setnx" {
			n.Add(1)
		}
	})
	return &n
}

func TestWaiterRefusedByHolderSleepsTheBackoffBound(t *testing.T) {
	fn := newFakeNodes(t, 3)
	clk := fakeClock()
	holder := newClient(t, fn.pools)
	c := newClient(t, fn.pools, redlock.WithClock(clk))
	l, err := holder.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	attempts := setnxCounter(fn, 0)
	got := lockAsync(c, "k", redlock.WithRetry(redlock.ExponentialBackoff(time.Millisecond, time.Hour)))
	<-clk.BlockUntil(1)               // two attempts refused, asleep
	time.Sleep(50 * time.Millisecond) // their calls to node 0 have all landed
	asleep := attempts.Load()

	clk.Advance(10 * time.Millisecond) // the backoff's early steps would have polled by now
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, asleep, attempts.Load(), "the holder's release will wake it: no polling")
	require.NoError(t, l.Unlock(bg()))
	require.NoError(t, <-got)
}

func TestSplitVoteRetriesAtTheFirstStep(t *testing.T) {
	fn := newFakeNodes(t, 3)
	clk := fakeClock()
	c := newClient(t, fn.pools, redlock.WithClock(clk))
	for i, s := range fn.servers[1:] {
		require.NoError(t, s.Set("k", "another contender"))
		// Their refusals come after node 0's yes, so that the attempt
		// sees its partial win before it is decided.
		fn.faults[i+1].Before(func(string) { time.Sleep(20 * time.Millisecond) })
	}
	got := lockAsync(c, "k", redlock.WithRetry(redlock.ExponentialBackoff(time.Second, time.Hour)))
	<-clk.BlockUntil(1) // won node 0 twice, no majority; asleep

	for _, s := range fn.servers[1:] {
		s.Del("k") // the other contender backs off too
	}
	clk.Advance(time.Second) // the first step, not the second (1-2s)
	require.NoError(t, <-got, "retried after the first step")
}

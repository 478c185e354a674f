package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

// never is a retry strategy whose backoff is so long that only a grant can
// end a wait within a test (a waiter's rounds come every third of the TTL,
// 20s for the tests' one-minute locks).
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

// waitQueued waits until key's queue holds n waiters on every node.
func waitQueued(t *testing.T, fn *fakeNodes, key string, n int) {
	t.Helper()
	// The waiters queue in their first rounds: node calls (nodeCallBound).
	awaitState(t, nodeCallBound, fmt.Sprintf("%d waiters in %s's queue on every node", n, key), func() bool {
		for _, s := range fn.servers {
			if got, _ := s.ZMembers(queueKey(key)); len(got) != n {
				return false
			}
		}
		return true
	}, onFakes(fn))
}

// attemptsOf returns a Client option that reports the Attempts of each
// acquisition on the returned channel.
func attemptsOf() (redlock.Option, <-chan int) {
	ch := make(chan int, 16)
	return redlock.WithObserver(redlock.ObserverFunc(func(_ context.Context, e redlock.Event) {
		if e.Kind == redlock.Acquired || e.Kind == redlock.NotObtained {
			ch <- e.Attempts
		}
	})), ch
}

func TestReleaseHandsTheLockToAWaiterOfAnotherClient(t *testing.T) {
	fn := newFakeNodes(t, 3)
	holder := newClient(t, fn.pools)
	observe, attempts := attemptsOf()
	waiter := newClient(t, fn.pools, observe)
	l, err := holder.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	holder.WaitIdle() // its SET has landed on every node

	got := lockAsync(waiter, "k", never)
	waitQueued(t, fn, "k", 1)
	require.NoError(t, l.Unlock(bg()))
	require.NoError(t, <-got, "handed over by the release, not by the hour-long backoff")
	assert.Equal(t, 1, <-attempts, "queued by its first attempt, handed the lock by the release: no other attempt")
	waitQueued(t, fn, "k", 0)
}

func TestLostMessageIsCoveredByTheNextRound(t *testing.T) {
	fn := newFakeNodes(t, 3)
	clk := fakeClock()
	holder := newClient(t, fn.pools)
	waiter := newClient(t, fn.pools, redlock.WithTimeSource(clk))
	for _, f := range fn.faults {
		f.Mute(true) // every grant message is lost
	}
	l, err := holder.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	holder.WaitIdle() // its SET has landed on every node
	got := lockAsync(waiter, "k", redlock.WithRetry(redlock.ConstantBackoff(time.Second)))
	waitQueued(t, fn, "k", 1)          // refused on arrival: queued, its next round a second away
	require.NoError(t, l.Unlock(bg())) // the nodes hand it the key; nobody tells it
	waitQueued(t, fn, "k", 0)
	clk.Advance(time.Second) // its next round finds the key granted on every node
	require.NoError(t, <-got)
}

func TestWaitersAreServedInArrivalOrderAcrossAndWithinClients(t *testing.T) {
	parallel(t)
	fn := newFakeNodes(t, 3)
	shared := newClient(t, fn.pools)
	// The first call on fresh in-process nodes dials them: a loaded machine
	// (two CPU hogs, two race builds of this package) has kept all three
	// past the 1s node timeout.
	l := retryUnanswered(t, shared, "the holder's lock", 3, func() (*redlock.Lock, error) {
		return shared.TryLock(bg(), "k", time.Minute)
	})
	shared.WaitIdle() // its SET has landed on every node

	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := range 6 {
		c := shared
		if i%2 == 1 {
			c = newClient(t, fn.pools) // another process, in effect
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(bg(), 30*time.Second)
			defer cancel()
			l, err := c.Lock(ctx, "k", time.Minute, never, redlock.WithFairness())
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			assert.NoError(t, l.Unlock(bg()))
		}()
		waitQueued(t, fn, "k", i+1) // waiter i has queued before waiter i+1 arrives
	}
	require.NoError(t, l.Unlock(bg()))
	wg.Wait()
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, order, "first come, first served")
}

func TestAReleaseWakesNobodyElse(t *testing.T) {
	fn := newFakeNodes(t, 3)
	holder := newClient(t, fn.pools)
	c := newClient(t, fn.pools)
	l, err := holder.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	holder.WaitIdle() // its SET has landed on every node

	var results []<-chan error
	for i := range 10 {
		results = append(results, lockAsync(c, "k", never))
		waitQueued(t, fn, "k", i+1)
	}
	before := fn.faults[0].Calls()
	require.NoError(t, l.Unlock(bg()))
	for _, r := range results {
		require.NoError(t, <-r)
	}
	c.WaitIdle() // the last releases have reached every node
	// Node 0 sees the holder's release and each waiter's release: 11
	// calls, each of which hands the key to the next waiter. A waiter
	// granted by one node first may ask the others after a few ms (the
	// check for a lost message): at most two more calls per waiter. A herd
	// would cost over a hundred.
	calls := fn.faults[0].Calls() - before
	t.Logf("node 0 calls during the ten hand-offs: %d", calls)
	assert.GreaterOrEqual(t, calls, int64(11))
	assert.LessOrEqual(t, calls, int64(11+10*2), "a release wakes one waiter, not ten")
}

func TestGivingUpLeavesNothingBehind(t *testing.T) {
	fn := newFakeNodes(t, 3)
	holder := newClient(t, fn.pools)
	c := newClient(t, fn.pools)
	l, err := holder.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	holder.WaitIdle() // its SET has landed on every node
	ctx, cancel := context.WithTimeout(bg(), 100*time.Millisecond)
	defer cancel()
	_, err = c.Lock(ctx, "k", time.Minute, never)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	c.WaitIdle()
	for i, s := range fn.servers {
		for _, k := range []string{queueKey("k"), queueLeasesKey("k"), queueEntriesKey("k")} {
			if k == queueEntriesKey("k") {
				continue // the last holder's record may stay until it expires
			}
			assert.False(t, s.Exists(k), "node %d: %s left behind", i, k)
		}
	}

	// A later waiter still works: nothing stale blocks the queue.
	got := lockAsync(c, "k", never)
	waitQueued(t, fn, "k", 1)
	require.NoError(t, l.Unlock(bg()))
	require.NoError(t, <-got)
}

func TestCloseEndsWaiters(t *testing.T) {
	fn := newFakeNodes(t, 3)
	holder := newClient(t, fn.pools)
	l, err := holder.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	holder.WaitIdle() // its SET has landed on every node
	defer l.Unlock(bg())
	c, err := redlock.New(fn.pools)
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		_, err := c.Lock(bg(), "k", time.Minute, never) // no deadline: only Close ends it
		got <- err
	}()
	waitQueued(t, fn, "k", 1)
	require.NoError(t, c.Close())
	err = <-got
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrClosed)
	waitQueued(t, fn, "k", 0) // Close waited for the waiter to leave the queues
}

func TestRelockWaitsForOwnDeleteOnEachNode(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	c.WaitIdle()

	slow := fn.faults[2]
	release := slow.Hold() // node 2's delete is still on its way when Unlock returns
	calls := slow.Calls() + 1
	require.NoError(t, l.Unlock(bg()))
	// Unlock returns at the majority: node 2's delete may not have reached
	// the node yet (a loaded run looked before it had, and counted it as
	// the new SET). Once it has, it waits there, held.
	redistest.WaitFor(t, 5*time.Second, "Unlock's delete to reach node 2", func() (bool, string) {
		return slow.Calls() == calls, fmt.Sprintf("%d calls to node 2", slow.Calls())
	})
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

func TestAcquisitionsOfOneClientAreOrdered(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	slow := fn.faults[2]
	release := slow.Hold() // the first SET to node 2 lands late
	l1, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err, "nodes 0 and 1 are a majority")
	// TryLock returns at the majority: its SET to node 2 may not have
	// reached the node yet (a loaded run counted it after, as if the
	// delete or the new SET had overtaken it). Once it has, it waits
	// there, held.
	redistest.WaitFor(t, 5*time.Second, "the first SET to reach node 2", func() (bool, string) {
		return slow.Calls() == 1, fmt.Sprintf("%d calls to node 2", slow.Calls())
	})
	require.NoError(t, l1.Unlock(bg()))
	calls := slow.Calls()
	l2, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, calls, slow.Calls(), "neither the delete nor the new SET overtakes the first SET on node 2")

	release()
	c.WaitIdle()
	got, err := fn.servers[2].Get("k")
	require.NoError(t, err)
	assert.Equal(t, l2.Token(), got, "node 2 ran the first SET, its delete, then the second SET")
	assert.Equal(t, 3, fn.holders("k", l2.Token()), "the second lock holds every node, not a bare majority")
	require.NoError(t, l2.Unlock(bg()))
}

func TestRetryStrategyDelaysAreWaitedBeforeEachRetry(t *testing.T) {
	fn := newFakeNodes(t, 3)
	holder := newClient(t, fn.pools)
	observe, attempts := attemptsOf()
	c := newClient(t, fn.pools, observe)
	l, err := holder.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	holder.WaitIdle() // its SET has landed on every node
	defer l.Unlock(bg())

	var mu sync.Mutex
	var asked []int
	s := redlock.LimitRetry(redlock.RetryFunc(func(n int) (time.Duration, bool) {
		mu.Lock()
		asked = append(asked, n)
		mu.Unlock()
		return time.Millisecond, true
	}), 2)
	_, err = c.Lock(bg(), "k", time.Minute, redlock.WithRetry(s))
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	var taken *redlock.NodeError
	require.ErrorAs(t, err, &taken)
	assert.Equal(t, 3, <-attempts, "the first try and two retries")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []int{1, 2}, asked, "NextDelay(k) is asked, and waited, before retry k; LimitRetry stops the third")
}

func TestNoRetryMakesLockOneAttempt(t *testing.T) {
	fn := newFakeNodes(t, 3)
	holder := newClient(t, fn.pools)
	observe, attempts := attemptsOf()
	c := newClient(t, fn.pools, observe)
	l, err := holder.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	holder.WaitIdle() // its SET has landed on every node
	defer l.Unlock(bg())
	_, err = c.Lock(bg(), "k", time.Minute, redlock.WithRetry(redlock.NoRetry()))
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrTaken)
	assert.Equal(t, 1, <-attempts)
	waitQueued(t, fn, "k", 0)
}

func TestFencedLockHandedOverGetsAHigherFence(t *testing.T) {
	fn := newFakeNodes(t, 3)
	holder := newClient(t, fn.pools)
	waiter := newClient(t, fn.pools)
	l, err := holder.TryLock(bg(), "k", time.Minute, redlock.WithFencing())
	require.NoError(t, err)
	holder.WaitIdle() // its SET has landed on every node: the waiter queues on all three
	got := make(chan *redlock.Lock, 1)
	go func() {
		l2, err := waiter.Lock(bg(), "k", time.Minute, never, redlock.WithFencing())
		assert.NoError(t, err)
		got <- l2
	}()
	waitQueued(t, fn, "k", 1)
	require.NoError(t, l.Unlock(bg()))
	l2 := <-got
	require.NotNil(t, l2)
	assert.Greater(t, l2.Fence(), l.Fence(), "the hand-over reads and raises the counters")
	require.NoError(t, l2.Unlock(bg()))
}

func TestFairTryLockTakesAFreeKeyOnlyWhenNobodyWaits(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "k", time.Minute, redlock.WithFairness())
	require.NoError(t, err, "nobody waits")
	require.NoError(t, l.Unlock(bg()))
	c.WaitIdle() // the release has reached every node

	for _, s := range fn.servers { // a waiter (another process) queued on every node
		_, err := s.ZAdd(queueKey("k"), 1, "someone")
		require.NoError(t, err)
	}
	_, err = c.TryLock(bg(), "k", time.Minute, redlock.WithFairness())
	require.ErrorIs(t, err, redlock.ErrNotObtained, "the key is free but someone waits")
	c.WaitIdle()
	for _, s := range fn.servers {
		ids, _ := s.ZMembers(queueKey("k"))
		assert.Equal(t, []string{"someone"}, ids, "the refused TryLock left the queue again")
	}
}

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

func TestRealFairnessAcrossClients(t *testing.T) {
	servers, pools := realNodes(t, 3)
	holder := newClient(t, pools)
	l, err := holder.TryLock(bg(), "res", time.Minute)
	require.NoError(t, err)

	queue, _ := redlock.QueueKeys("res")
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := range 4 {
		c := newClient(t, pools) // one Client each: separate processes, in effect
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(bg(), 30*time.Second)
			defer cancel()
			l, err := c.Lock(ctx, "res", time.Minute, redlock.WithFairness())
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			assert.NoError(t, l.Unlock(bg()))
		}()
		// Waiter i is in the queue on every node before waiter i+1 arrives.
		require.Eventually(t, func() bool {
			for _, s := range servers {
				if s.Client(t).ZCard(bg(), queue).Val() != int64(i+1) {
					return false
				}
			}
			return true
		}, 10*time.Second, time.Millisecond)
	}
	require.NoError(t, l.Unlock(bg()))
	wg.Wait()
	assert.Equal(t, []int{0, 1, 2, 3}, order, "served in arrival order across Clients")
	for _, s := range servers { // winners leave the other nodes' queues in the background
		assert.Eventually(t, func() bool { return s.Client(t).ZCard(bg(), queue).Val() == 0 },
			10*time.Second, time.Millisecond, "the queue empties")
	}
}

func TestRealFairQueueSurvivesDeadAndImpatientWaiters(t *testing.T) {
	servers, pools := realNodes(t, 3)
	queue, leases := redlock.QueueKeys("res")
	// A waiter that died at the head of the queue: an early ticket and a
	// lease that runs out in 300ms.
	for _, s := range servers {
		r := s.Client(t)
		require.NoError(t, r.ZAdd(bg(), queue, redisZ(1, "dead")).Err())
		now, err := r.Time(bg()).Result()
		require.NoError(t, err)
		require.NoError(t, r.ZAdd(bg(), leases, redisZ(float64(now.Add(300*time.Millisecond).UnixMilli()), "dead")).Err())
	}
	c := newClient(t, pools)

	// An impatient waiter gives up while the dead one still blocks: it
	// leaves no entry behind.
	ctx, cancel := context.WithTimeout(bg(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Lock(ctx, "res", time.Minute, redlock.WithFairness())
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	for _, s := range servers {
		ids := s.Client(t).ZRange(bg(), queue, 0, -1).Val()
		assert.NotContains(t, ids, "", "no stray entry")
		assert.LessOrEqual(t, len(ids), 1, "only the dead waiter may remain")
	}

	// A patient waiter gets the lock once the dead one's lease runs out.
	ctx2, cancel2 := context.WithTimeout(bg(), 10*time.Second)
	defer cancel2()
	l, err := c.Lock(ctx2, "res", time.Minute, redlock.WithFairness())
	require.NoError(t, err)
	require.NoError(t, l.Unlock(bg()))
	_, err = c.TryLock(bg(), "res", time.Minute, redlock.WithFairness(), redlock.WithFencing())
	require.ErrorContains(t, err, "cannot be combined")
}

func TestRealFairReleaseWakesOnlyTheNextWaiter(t *testing.T) {
	servers, pools := realNodes(t, 3)
	holder := newClient(t, pools)
	l, err := holder.TryLock(bg(), "res", time.Minute, redlock.WithFairness())
	require.NoError(t, err)
	queue, _ := redlock.QueueKeys("res")
	inQueue := func(n int64) {
		require.Eventually(t, func() bool {
			for _, s := range servers {
				if s.Client(t).ZCard(bg(), queue).Val() != n {
					return false
				}
			}
			return true
		}, 10*time.Second, time.Millisecond)
	}

	// Two waiters in two Clients, first then second, each retrying only
	// after an hour: messages alone move them.
	attempts := make(chan int, 2)
	var done []<-chan error
	for i := range 2 {
		c := newClient(t, pools, redlock.WithObserver(redlock.ObserverFunc(func(_ context.Context, e redlock.Event) {
			if e.Kind == redlock.Acquired {
				attempts <- e.Attempts
			}
		})))
		done = append(done, lockAsync(c, "res", redlock.WithFairness(), never))
		inQueue(int64(i + 1))
	}
	require.NoError(t, l.Unlock(bg())) // names the first waiter; the second sleeps on
	for _, d := range done {
		require.NoError(t, <-d)
	}
	assert.Equal(t, 2, <-attempts, "first waiter: its refused attempt, then the one its release message asked for")
	assert.Equal(t, 2, <-attempts, "second waiter: not woken by the release that named the first")
}

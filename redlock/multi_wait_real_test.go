package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/fanout"
	"github.com/redlockgo/redlock/internal/pooltest"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// Waiting for multi-locks on real redis-server processes: LockAll's bounds
// and wake-ups, and the hand-off of a multi-lock's keys to queued waiters.

func TestRealLockAllBoundedWithSilentNodes(t *testing.T) {
	// Its cleanups wait out the calls to the silent nodes.
	defer parallel(t).idle()
	_, pools := faultyNodes(t) // one node paused, one that never answers
	holder := defaultClient(t, pools)
	c := defaultClient(t, pools)
	keys := []string{"v1", "v2"}

	l := tryLate(t, holder, "three of five nodes answer", func() (*redlock.Lock, error) {
		return holder.TryLockAll(bg(), keys, faultTTL)
	})

	// Held: LockAll ends with its context, within the bound past it.
	ctx, cancel := context.WithTimeout(bg(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.LockAll(ctx, []string{"v2", "v3"}, faultTTL)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 300*time.Millisecond+bound)

	// Released: the next retry (at most 250ms apart by default) takes it.
	got := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
		defer cancel()
		l, err := c.LockAll(ctx, []string{"v2", "v3"}, faultTTL)
		got <- outcome{l, err, time.Now()}
	}()
	released := time.Now()
	unlockLate(t, l, "the holder's Unlock")
	o := <-got
	require.NoError(t, o.err)
	assert.Less(t, o.at.Sub(released), bound+250*time.Millisecond)
	unlockLate(t, o.l, "the waiter's Unlock")
}

func TestRealLockAllWokenByRelease(t *testing.T) {
	_, pools := realNodes(t, 5)
	// c's first node is watched, to know when LockAll made its first attempt.
	watched := pooltest.Wrap(pools[0])
	c := newClient(t, append([]pool.Pool{watched}, pools[1:]...))
	other := newClient(t, pools)

	t.Run("same client: at once, whatever the retry delay", func(t *testing.T) {
		held, err := c.TryLock(bg(), "s", 10*time.Second)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(bg(), 5*time.Second)
		defer cancel()
		base := watched.Calls()
		got := make(chan error, 1)
		go func() {
			// Retries an hour apart: only the wake-up can make it in time.
			l, err := c.LockAll(ctx, []string{"s", "t"}, 10*time.Second, redlock.WithRetry(redlock.ConstantBackoff(time.Hour)))
			if err == nil {
				err = l.Unlock(bg())
			}
			got <- err
		}()
		// Once the attempt has its place in the order of c's calls on "s",
		// the release below reaches each node after it: the attempt fails.
		// The attempt's first call is its goroutine's first; 5s, for a
		// loaded machine's scheduler.
		redistest.WaitFor(t, 5*time.Second, "the attempt's first call on the watched node", func() (bool, string) {
			return watched.Calls() > base, fmt.Sprintf("%d calls, %d before", watched.Calls(), base)
		})
		require.NoError(t, held.Unlock(bg()))
		require.NoError(t, <-got)
	})

	t.Run("other client: woken, or at the next retry", func(t *testing.T) {
		held, err := other.TryLockAll(bg(), []string{"t", "u"}, 10*time.Second)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(bg(), 5*time.Second)
		defer cancel()
		base := watched.Calls()
		got := make(chan time.Time, 1)
		go func() {
			l, err := c.LockAll(ctx, []string{"s", "t"}, 10*time.Second, redlock.WithRetry(redlock.ConstantBackoff(100*time.Millisecond)))
			if assert.NoError(t, err) {
				assert.NoError(t, l.Unlock(bg()))
			}
			got <- time.Now()
		}()
		// The attempt's first call is its goroutine's first; 5s, for a
		// loaded machine's scheduler.
		redistest.WaitFor(t, 5*time.Second, "the attempt's first call on the watched node", func() (bool, string) {
			return watched.Calls() > base, fmt.Sprintf("%d calls, %d before", watched.Calls(), base)
		})
		released := time.Now()
		require.NoError(t, held.Unlock(bg()))
		// The promise: woken by the release (wake_real_test.go shows it with
		// 30s retries), at the latest at the next retry (100ms here); a
		// second leaves room for a loaded machine.
		assert.Less(t, (<-got).Sub(released), time.Second)
	})
}

func TestRealMultiLockReleaseHandsKeysToQueuedWaiters(t *testing.T) {
	servers, pools := realNodes(t, 5)
	holder := newClient(t, pools)
	waiter := newClient(t, pools)
	l, err := holder.TryLockAll(bg(), []string{"h", "i"}, 10*time.Second)
	require.NoError(t, err)
	holder.WaitIdle()

	// A single-key Lock on "h" queues behind the multi-lock. Its retries
	// an hour apart, it refreshes its place only every third of the TTL:
	// only the hand-off by release_all.lua gets it the key within the bound.
	got := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
		defer cancel()
		wl, err := waiter.Lock(ctx, "h", 10*time.Second, redlock.WithRetry(redlock.ConstantBackoff(time.Hour)))
		got <- outcome{wl, err, time.Now()}
	}()
	requireQueued(t, servers, "h", l.Token())
	released := time.Now()
	require.NoError(t, l.Unlock(bg()))
	o := <-got
	require.NoError(t, o.err)
	assert.Less(t, o.at.Sub(released), time.Second, "handed over %v after the release", o.at.Sub(released))
	holder.WaitIdle()
	require.Equal(t, len(servers), realHolders(t, servers, "h", o.l.Token()), "every node handed h to the waiter")
	requireAbsent(t, servers, "i")
	require.NoError(t, o.l.Unlock(bg()))
}

func TestRealLockAllServedInTurnAmongSingleKeyLockers(t *testing.T) {
	_, pools := realNodes(t, 3)
	const workers = 4
	const ttl = 2 * time.Second
	const nodeTimeout = time.Second // newClient's

	// Four workers take "a" in a loop, each through its own Client: a
	// release always finds a waiter in the queue to hand "a" to.
	var inside atomic.Int32 // holders of "a" at once, by the test's count
	var overlaps, taken atomic.Int64
	warmed := make(chan struct{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		c := newClient(t, pools)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(bg())
			defer cancel()
			go func() { <-stop; cancel() }()
			for ctx.Err() == nil {
				l, err := c.Lock(ctx, "a", ttl)
				if err != nil {
					continue
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				if taken.Add(1) == 4*workers {
					close(warmed)
				}
				inside.Add(-1)
				_ = l.Unlock(bg())
			}
		}()
	}
	defer wg.Wait()
	defer close(stop)
	<-warmed

	// LockAll joins the queue of "a" on its first attempt: the waiters
	// ahead of it there (at most the workers) are served first, each for
	// at most a TTL, the lock held at its arrival ends within a TTL, and
	// then "a" is kept for it. A wake-up lost costs at most the retry
	// strategy's largest delay (250ms), and each attempt a node timeout.
	bound := (workers+1)*ttl + 250*time.Millisecond + 2*nodeTimeout
	c := newClient(t, pools)
	ctx, cancel := context.WithTimeout(bg(), bound)
	defer cancel()
	before := taken.Load()
	l, err := c.LockAll(ctx, []string{"a", "b"}, ttl)
	require.NoError(t, err, "LockAll not served within %v while the workers took \"a\" %d times", bound, taken.Load()-before)
	if inside.Add(1) > 1 {
		overlaps.Add(1)
	}
	inside.Add(-1)
	unlockLate(t, l, "the multi-lock's Unlock")
	require.Zero(t, overlaps.Load(), "two holders of \"a\" at once")
}

func TestRealLockAllKeepsAFreedKeyAndHandsItOnWhenItGivesUp(t *testing.T) {
	servers, pools := realNodes(t, 3)
	holders := newClient(t, pools)
	la, err := holders.TryLock(bg(), "ra", 10*time.Second)
	require.NoError(t, err)
	lb, err := holders.TryLock(bg(), "rb", 10*time.Second)
	require.NoError(t, err)
	// Both held on every node before the multi-lock comes: a node where
	// it found "rb" free would be one where it may take both keys.
	holders.WaitIdle()
	requireHeldEverywhere(t, servers, la.Token(), "ra")
	requireHeldEverywhere(t, servers, lb.Token(), "rb")
	queued := func(n int64) func() bool {
		return func() bool {
			for _, s := range servers {
				if s.Client(t).ZCard(bg(), queueKey("ra")).Val() < n {
					return false
				}
			}
			return true
		}
	}
	seen := onServers(servers, "ra", queueKey("ra"), queueKey("ra")+":entries")

	// The multi-lock queues on "ra" on its first attempt; a single-key
	// Lock on "ra" queues behind it. Both retry an hour apart: only the
	// queues can serve them within the bounds below.
	hour := redlock.WithRetry(redlock.ConstantBackoff(time.Hour))
	m := newClient(t, pools)
	mctx, mcancel := context.WithTimeout(bg(), 30*time.Second)
	defer mcancel()
	multi := make(chan error, 1)
	go func() {
		l, err := m.LockAll(mctx, []string{"ra", "rb"}, 10*time.Second, hour)
		if err == nil {
			_ = l.Unlock(bg())
		}
		multi <- err
	}()
	awaitState(t, 2*nodeCallBound, "the multi-lock queued for ra on every node", queued(1), seen)
	w := newClient(t, pools)
	single := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg(), 30*time.Second)
		defer cancel()
		l, err := w.Lock(ctx, "ra", 10*time.Second, hour)
		single <- outcome{l, err, time.Now()}
	}()
	awaitState(t, 2*nodeCallBound, "the single-key waiter queued behind it on every node", queued(2), seen)

	// "ra" freed: kept for the multi-lock, which waits for "rb", not
	// handed to the later single-key waiter.
	require.NoError(t, la.Unlock(bg()))
	holders.WaitIdle()
	for i, s := range servers {
		v := s.Client(t).Get(bg(), "ra").Val()
		require.True(t, strings.HasPrefix(v, "q:"), "node %d: ra holds %q, not the multi-lock's reservation", i, v)
		require.Positive(t, s.Client(t).PTTL(bg(), "ra").Val(), "node %d: the reservation has no TTL", i)
	}

	// The multi-lock gives up: its reservation passes to the waiter.
	mcancel()
	require.ErrorIs(t, <-multi, redlock.ErrNotObtained)
	gaveUp := time.Now()
	o := <-single
	require.NoError(t, o.err)
	assert.Less(t, o.at.Sub(gaveUp), time.Second, "handed over %v after the multi-lock gave up", o.at.Sub(gaveUp))
	m.WaitIdle()
	require.Equal(t, len(servers), realHolders(t, servers, "ra", o.l.Token()), "every node handed ra to the waiter")
	require.NoError(t, o.l.Unlock(bg()))
	require.NoError(t, lb.Unlock(bg()))
}

func TestRealLockAllReservationOfADeadClientLastsABeat(t *testing.T) {
	servers, pools := realNodes(t, 3)
	const ttl = time.Second
	const nodeTimeout = time.Second // newClient's
	holder := newClient(t, pools)
	lb, err := holder.TryLock(bg(), "db", 10*time.Second)
	require.NoError(t, err)
	holder.WaitIdle()
	requireHeldEverywhere(t, servers, lb.Token(), "db")

	// A LockAll whose retries are an hour apart heads the queue of "da",
	// free, and reserves it while "db" is held.
	faulty := make([]pool.Pool, len(pools))
	for i, p := range pools {
		faulty[i] = pooltest.Wrap(p)
	}
	m := newClient(t, faulty)
	mctx, mcancel := context.WithCancel(bg())
	defer mcancel()
	multi := make(chan error, 1)
	go func() {
		l, err := m.LockAll(mctx, []string{"da", "db"}, ttl, redlock.WithRetry(redlock.ConstantBackoff(time.Hour)))
		if err == nil {
			_ = l.Unlock(bg())
		}
		multi <- err
	}()
	defer func() { mcancel(); <-multi }()
	leases := queueKey("da") + ":leases"
	seen := onServers(servers, "da", queueKey("da"), leases)
	waiter := ""
	until := make([]float64, len(servers)) // the lease of its place, on each node
	awaitState(t, 2*nodeCallBound, "da reserved for the multi-lock on every node", func() bool {
		for i, s := range servers {
			c := s.Client(t)
			waiter = c.Get(bg(), "da").Val()
			if !strings.HasPrefix(waiter, "q:") {
				return false
			}
			until[i] = c.ZScore(bg(), leases, waiter).Val()
		}
		return true
	}, seen)
	// While it lives, it keeps its place and the reservation: refreshed
	// within a beat (a third of a second for a 1s TTL), long before its
	// retry is due.
	awaitState(t, 2*nodeCallBound, "its place refreshed on every node", func() bool {
		for i, s := range servers {
			c := s.Client(t)
			if c.Get(bg(), "da").Val() != waiter || c.ZScore(bg(), leases, waiter).Val() <= until[i] {
				return false
			}
		}
		return true
	}, seen)

	// Its Client dies: nothing of it reaches a node any more, not even its
	// leaving the queues. A call that went before lands within a call
	// bound; the reservation it leaves lasts a beat, two node timeouts and
	// a second (max(TTL, 1s)/3 + 2*1s + 1s); a Lock waiter that came
	// later asks the nodes at least every third of its TTL, and its round
	// takes a node call.
	for _, p := range faulty {
		p.(*pooltest.Faulty).Fail(errors.New("the Client died"))
	}
	lease := max(ttl, time.Second)/3 + 2*nodeTimeout + time.Second
	bound := fanout.CallBound(nodeTimeout) + lease + ttl/3 + nodeCallBound
	w := newClient(t, pools)
	ctx, cancel := context.WithTimeout(bg(), bound)
	defer cancel()
	l, err := w.Lock(ctx, "da", ttl, redlock.WithRetry(redlock.ConstantBackoff(time.Hour)))
	require.NoError(t, err, "the dead multi-lock still blocks da after %v: %s", bound, seen())
	unlockLate(t, l, "the waiter's Unlock")
	require.NoError(t, lb.Unlock(bg()))
}

func TestRealLockAllKeepsItsTurnWhereItsTakeOnAMinorityIsUndone(t *testing.T) {
	servers, pools := realNodes(t, 3)
	// "kb" is held by someone else on nodes 1 and 2: a LockAll of "ka" and
	// "kb" takes both on node 0 only, a minority, and undoes that take.
	for _, s := range servers[1:] {
		require.NoError(t, s.Client(t).Set(bg(), "kb", "SOMEONEELSESTOKEN", time.Minute).Err())
	}
	m := newClient(t, pools)
	mctx, mcancel := context.WithCancel(bg())
	multi := make(chan error, 1)
	go func() {
		// A 30s TTL: a beat of 10s, an hour between retries.
		l, err := m.LockAll(mctx, []string{"ka", "kb"}, 30*time.Second, redlock.WithRetry(redlock.ConstantBackoff(time.Hour)))
		if err == nil {
			_ = l.Unlock(bg())
		}
		multi <- err
	}()
	ended := false
	defer func() {
		if !ended {
			mcancel()
			<-multi
		}
	}()

	// The undone take leaves both keys reserved for it on node 0, where it
	// heads their queues, not free for the next comer. (Without its turn
	// kept, node 0 has them free between its attempts, or taken by one:
	// never reserved.)
	node0 := servers[0].Client(t)
	seen := onServers(servers, "ka", "kb", queueKey("ka"), queueKey("kb"))
	awaitState(t, 2*nodeCallBound, "ka and kb reserved for the multi-lock on node 0", func() bool {
		a, b := node0.Get(bg(), "ka").Val(), node0.Get(bg(), "kb").Val()
		return strings.HasPrefix(a, "q:") && a == b
	}, seen)
	// Its own cleanup does not wake it into the same split again and
	// again: the reservation, which lasts a beat (10s), two node timeouts
	// and a second from the attempt, is left alone for a second.
	lease := 30*time.Second/3 + 2*time.Second + time.Second
	awaitState(t, 2*nodeCallBound, "the reservation on node 0 left alone for a second", func() bool {
		return strings.HasPrefix(node0.Get(bg(), "ka").Val(), "q:") && node0.PTTL(bg(), "ka").Val() < lease-time.Second
	}, seen)

	// When the call ends, its reservations pass on: nothing is left.
	mcancel()
	ended = true
	require.ErrorIs(t, <-multi, redlock.ErrNotObtained)
	m.WaitIdle()
	requireAbsent(t, servers[:1], "ka", "kb")
	requireAbsent(t, servers, "ka")
}

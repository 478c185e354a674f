package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

// readers counts, on each server, the live entries of key's readers.
func readers(t *testing.T, servers []*redistest.Server, key string) []int64 {
	t.Helper()
	out := make([]int64, len(servers))
	for i, s := range servers {
		n, err := s.Client(t).ZCard(bg(), readersKey(key)).Result()
		require.NoError(t, err)
		out[i] = n
	}
	return out
}

// leftovers counts the servers where any of keys exists.
func leftovers(t *testing.T, servers []*redistest.Server, keys ...string) int {
	t.Helper()
	n := 0
	for _, s := range servers {
		c, err := s.Client(t).Exists(bg(), keys...).Result()
		require.NoError(t, err)
		if c > 0 {
			n++
		}
	}
	return n
}

func TestRealReadersAndWriterExcludeEachOther(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	a, b := newClient(t, pools), newClient(t, pools)

	// Many readers at once, from two Clients.
	var rs []*redlock.Lock
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := []*redlock.Client{a, b}[i%2]
			r, err := c.TryRLock(bg(), "doc", 10*time.Second)
			if assert.NoError(t, err) {
				mu.Lock()
				rs = append(rs, r)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, rs, 20)
	a.WaitIdle() // the last nodes' answers too
	b.WaitIdle()
	assert.Equal(t, []int64{20, 20, 20, 20, 20}, readers(t, servers, "doc"))

	// Readers exclude a writer.
	_, err := b.TryLock(bg(), "doc", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrTaken)
	for _, r := range rs[1:] {
		releasedOrLate(t, r.Unlock(bg()), "r's Unlock")
	}
	_, err = b.TryLock(bg(), "doc", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained, "one reader left is enough")
	require.NoError(t, rs[0].Unlock(bg()))
	a.WaitIdle()
	b.WaitIdle()
	assert.Zero(t, leftovers(t, servers, "doc", readersKey("doc")), "the last reader frees the key")

	// A writer excludes readers.
	w, err := b.TryLock(bg(), "doc", 10*time.Second)
	require.NoError(t, err)
	b.WaitIdle() // the writer's SET on the last nodes too (on a loaded machine one may have timed out)
	held := realHolders(t, servers, "doc", w.Token())
	require.GreaterOrEqual(t, held, 3)
	_, err = a.TryRLock(bg(), "doc", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrTaken)
	a.WaitIdle()
	b.WaitIdle()
	assert.Equal(t, held, realHolders(t, servers, "doc", w.Token()), "a refused reader leaves the writer's key alone")
	releasedOrLate(t, w.Unlock(bg()), "w's Unlock")
	r, err := a.TryRLock(bg(), "doc", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, r.Extend(bg(), 20*time.Second))
	releasedOrLate(t, r.Unlock(bg()), "r's Unlock")
	require.ErrorIs(t, r.Unlock(bg()), redlock.ErrNotHeld)
}

func TestRealWaitingWriterGoesBeforeNewReaders(t *testing.T) {
	servers, pools := realNodes(t, 5)
	rc, wc := newClient(t, pools), newClient(t, pools)
	r, err := rc.TryRLock(bg(), "doc", 10*time.Second)
	require.NoError(t, err)
	rc.WaitIdle() // the reader is on every node, so the writer queues on every node

	got := make(chan error, 1)
	var w *redlock.Lock
	go func() {
		var err error
		ctx, cancel := context.WithTimeout(bg(), 20*time.Second)
		defer cancel()
		// Rounds 2.5-5s apart: a quick start proves the hand-off.
		w, err = wc.Lock(ctx, "doc", 10*time.Second, redlock.WithRetry(redlock.ConstantBackoff(5*time.Second)))
		got <- err
	}()
	// The writer queues in its first round: node calls; twice
	// nodeCallBound, as its first try may find the nodes busy with the
	// readers' calls.
	awaitState(t, 2*nodeCallBound, "the writer queued on every node", func() bool {
		for _, s := range servers {
			if n, _ := s.Client(t).ZCard(bg(), queueKey("doc")).Result(); n != 1 {
				return false
			}
		}
		return true
	}, onServers(servers, queueKey("doc")))
	_, err = rc.TryRLock(bg(), "doc", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained, "a new reader waits behind the waiting writer")

	released := time.Now()
	require.NoError(t, r.Unlock(bg()))
	require.NoError(t, <-got)
	assert.Less(t, time.Since(released), 1500*time.Millisecond,
		"the last reader's release hands the key to the waiting writer, without waiting for its next round")
	releasedOrLate(t, w.Unlock(bg()), "w's Unlock")
}

func TestRealRLockWokenAfterWriterRelease(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 5)
	c := newClient(t, pools)
	w, err := c.TryLock(bg(), "doc", 10*time.Second)
	require.NoError(t, err)
	got := make(chan error, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(bg(), 20*time.Second)
			defer cancel()
			r, err := c.RLock(ctx, "doc", 10*time.Second)
			if err == nil {
				defer func() { assert.NoError(t, r.Unlock(bg())) }()
			}
			got <- err
		}()
	}
	time.Sleep(300 * time.Millisecond) // let both readers fail at least once (not synchronisation: either order passes)
	released := time.Now()
	require.NoError(t, w.Unlock(bg()))
	require.NoError(t, <-got)
	require.NoError(t, <-got)
	// Retries are at most 250ms apart with the default strategy.
	assert.Less(t, time.Since(released), 2*time.Second)
	wg.Wait()

	// A context that ends the wait: ErrNotObtained with the node detail, and ctx.Err().
	w, err = c.TryLock(bg(), "doc", 10*time.Second)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(bg(), time.Second)
	defer cancel()
	_, err = c.RLock(ctx, "doc", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, redlock.ErrTaken)
	releasedOrLate(t, w.Unlock(bg()), "w's Unlock")
}

func TestRealRLockMinorityDownOrPaused(t *testing.T) {
	servers, pools := realNodes(t, 5)
	const nodeTimeout = 250 * time.Millisecond
	c, err := redlock.New(pools, redlock.WithNodeTimeout(nodeTimeout))
	require.NoError(t, err)
	defer c.Close() // after Resume (deferred later, runs first)
	servers[0].Kill()
	servers[1].Pause()
	defer servers[1].Resume()
	for range 3 {
		start := time.Now()
		r, err := c.TryRLock(bg(), "doc", 10*time.Second)
		require.NoError(t, err)
		assert.Less(t, time.Since(start), time.Second, "decided at the majority, within the node timeout")
		p, err := c.TryAcquirePermit(bg(), "sem", 2, 10*time.Second)
		require.NoError(t, err)
		require.NoError(t, r.Extend(bg(), 10*time.Second))
		require.NoError(t, p.Extend(bg(), 10*time.Second))
		releasedOrLate(t, r.Unlock(bg()), "r's Unlock")
		releasedOrLate(t, p.Unlock(bg()), "p's Unlock")
	}
}

func TestRealFailedRLockLeavesNothing(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	// A writer holds the key on three nodes only: a reader gets two.
	wc := newClient(t, pools[:3])
	w, err := wc.TryLock(bg(), "doc", 10*time.Second)
	require.NoError(t, err)
	wc.WaitIdle()
	c := newClient(t, pools)
	_, err = c.TryRLock(bg(), "doc", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	var qe *redlock.QuorumError
	require.ErrorAs(t, err, &qe)
	assert.LessOrEqual(t, qe.Agreed, 2)
	c.WaitIdle()
	assert.Zero(t, leftovers(t, servers[3:], "doc", readersKey("doc")), "the failed reader left nothing")
	assert.Equal(t, 3, realHolders(t, servers, "doc", w.Token()))
}

func TestRealRLockAutoExtendReportsLoss(t *testing.T) {
	servers, pools := realNodes(t, 5)
	// A 250ms node timeout and a 2s TTL for the kept reader: its keeper has
	// about 1.4s to get an extension through before its loss margin. With
	// 50ms and 1s, a loaded machine (two CPU hogs, two race builds of this
	// package) left every node of the final Unlock unanswered.
	c := newClient(t, pools, redlock.WithNodeTimeout(250*time.Millisecond))
	other := retryUnanswered(t, c, "the other reader", 3, func() (*redlock.Lock, error) {
		return c.TryRLock(bg(), "doc", 10*time.Second)
	})
	c.WaitIdle() // WaitIdle would also wait for a keeper: not after r
	// other is on a majority, on every node unless a call of it timed out
	// (on a loaded machine): its lease must stay wherever it is.
	var had []*redistest.Server
	for _, s := range servers {
		if _, err := s.Client(t).ZScore(bg(), readersKey("doc"), other.Token()).Result(); err == nil {
			had = append(had, s)
		}
	}
	require.GreaterOrEqual(t, len(had), 3)
	r := retryUnanswered(t, c, "the kept reader", 3, func() (*redlock.Lock, error) {
		return c.TryRLock(bg(), "doc", 2*time.Second, redlock.WithAutoExtend(100*time.Millisecond))
	})
	on := 0 // r is on a majority: the three nodes below leave it two at most
	for _, s := range servers {
		if _, err := s.Client(t).ZScore(bg(), readersKey("doc"), r.Token()).Result(); err == nil {
			on++
		}
	}
	require.GreaterOrEqual(t, on, 3)
	first := r.Until()
	// The keeper must extend before the reader's validity ends, or it is
	// lost: that is the bound.
	redistest.WaitFor(t, time.Until(first), "the keeper to extend the reader", func() (bool, string) {
		return r.Until().After(first), fmt.Sprintf("Until %v, Err %v", r.Until().Sub(first), r.Err())
	})
	select {
	case <-r.Done():
		t.Fatal("lost while extended", r.Err())
	default:
	}
	for _, s := range servers[:3] { // the reader's lease vanishes from a majority
		require.NoError(t, s.Client(t).ZRem(bg(), readersKey("doc"), r.Token()).Err())
	}
	select {
	case <-r.Done():
		require.ErrorIs(t, r.Err(), redlock.ErrLockLost)
	case <-time.After(5 * time.Second):
		t.Fatal("loss not reported")
	}
	for _, s := range had {
		_, err := s.Client(t).ZScore(bg(), readersKey("doc"), other.Token()).Result()
		require.NoError(t, err, "the other reader's lease is untouched")
	}
	// Not released: the nodes say so (ErrNotHeld), or on a loaded machine
	// did not answer in time; never nil.
	if err := r.Unlock(bg()); !errors.Is(err, redlock.ErrNotHeld) {
		require.ErrorIs(t, err, redlock.ErrNotReleased, "the lost reader's Unlock")
		require.ErrorIs(t, err, redlock.ErrNodeTimeout, "the lost reader's Unlock")
		t.Logf("the lost reader's Unlock: %v (no node answered in time)", err)
	}
	releasedOrLate(t, other.Unlock(bg()), "the other reader's Unlock")
}

func TestRealReadersAndWritersUnderContention(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 5)
	clients := []*redlock.Client{newClient(t, pools), newClient(t, pools), newClient(t, pools)}
	var (
		readersIn, writersIn, mostReaders atomic.Int32
		violations, writes                atomic.Int32
		wg                                sync.WaitGroup
	)
	const workers, rounds = 9, 8
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[w%len(clients)]
			for r := range rounds {
				ctx, cancel := context.WithTimeout(bg(), 60*time.Second)
				write := (w+r)%3 == 0
				var l *redlock.Lock
				var err error
				if write {
					l, err = c.Lock(ctx, "doc", 10*time.Second)
				} else {
					l, err = c.RLock(ctx, "doc", 10*time.Second)
				}
				cancel()
				if !assert.NoError(t, err) {
					return
				}
				if write {
					if writersIn.Add(1) > 1 || readersIn.Load() > 0 {
						violations.Add(1)
					}
					writes.Add(1)
					time.Sleep(time.Millisecond)
					writersIn.Add(-1)
				} else {
					n := readersIn.Add(1)
					if writersIn.Load() > 0 {
						violations.Add(1)
					}
					for m := mostReaders.Load(); n > m && !mostReaders.CompareAndSwap(m, n); m = mostReaders.Load() {
					}
					time.Sleep(3 * time.Millisecond)
					readersIn.Add(-1)
				}
				assert.NoError(t, l.Unlock(bg()))
			}
		}()
	}
	wg.Wait()
	assert.Zero(t, violations.Load(), "a writer overlapped another holder")
	assert.Equal(t, int32(workers*rounds/3), writes.Load())
	assert.Greater(t, mostReaders.Load(), int32(1), "readers shared the key: the test exercised sharing")
}

package redlock_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

// permitsHeld counts, on each server, the permits of key (live or not yet
// pruned).
func permitsHeld(t *testing.T, servers []*redistest.Server, key string) []int64 {
	t.Helper()
	out := make([]int64, len(servers))
	for i, s := range servers {
		n, err := s.Client(t).HLen(bg(), key).Result()
		require.NoError(t, err)
		out[i] = n
	}
	return out
}

func TestRealPermitsNeverAboveLimit(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	clients := []*redlock.Client{newClient(t, pools), newClient(t, pools), newClient(t, pools)}
	const limit, workers, rounds = 3, 9, 6
	var (
		inside, most atomic.Int32
		wg           sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[w%len(clients)]
			for range rounds {
				ctx, cancel := context.WithTimeout(bg(), 60*time.Second)
				p, err := c.AcquirePermit(ctx, "sem", limit, 10*time.Second, redlock.WithRetry(redlock.ConstantBackoff(20*time.Millisecond)))
				cancel()
				if !assert.NoError(t, err) {
					return
				}
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				for _, h := range permitsHeld(t, servers, "sem") {
					assert.LessOrEqual(t, h, int64(limit), "a node holds more permits than the limit")
				}
				time.Sleep(2 * time.Millisecond) // hold it a little, so that holders overlap
				inside.Add(-1)
				// A release refused only for late answers (a node past
				// the 1s node timeout, seen in a loaded run) lands all the
				// same: the leftovers are counted after WaitIdle below.
				releasedOrLate(t, p.Unlock(bg()), "a permit's Unlock")
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, most.Load(), int32(limit), "more holders than permits at once")
	assert.Greater(t, most.Load(), int32(1), "permits were shared: the test exercised concurrency")
	for _, c := range clients {
		c.WaitIdle()
	}
	assert.Zero(t, leftovers(t, servers, "sem"), "every permit given back")
}

func TestRealPermitExclusionAndExpiry(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	c := newClient(t, pools)
	a, err := c.TryAcquirePermit(bg(), "sem", 2, 10*time.Second)
	require.NoError(t, err)
	dead, err := c.TryAcquirePermit(bg(), "sem", 2, time.Second) // never extended nor released
	require.NoError(t, err)
	c.WaitIdle() // both permits are on every node
	assert.NotEqual(t, a.Token(), dead.Token())
	_, err = c.TryAcquirePermit(bg(), "sem", 2, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrTaken)
	c.WaitIdle()
	assert.Equal(t, []int64{2, 2, 2, 2, 2}, permitsHeld(t, servers, "sem"), "a refused attempt takes no slot")

	// The dead holder's permit frees itself at its TTL; the live one is kept.
	ctx, cancel := context.WithTimeout(bg(), 5*time.Second)
	defer cancel()
	b, err := c.AcquirePermit(ctx, "sem", 2, 10*time.Second)
	require.NoError(t, err)
	assert.False(t, time.Now().Before(dead.Until()), "granted only after the dead permit's validity")
	require.ErrorIs(t, dead.Extend(bg(), time.Second), redlock.ErrNotHeld, "an expired permit is never re-created")
	require.NoError(t, a.Extend(bg(), 10*time.Second))
	require.NoError(t, a.Unlock(bg()))
	require.NoError(t, b.Unlock(bg()))
	c.WaitIdle()
	// Every released permit is gone from every node. The dead one, never
	// released, may still be on a node whose copy outlives the Client's
	// view of its validity (the node received it later than the others,
	// and the releases ran before it expired there): expiring in place, as
	// it should, it is the only entry a node may keep.
	for i, s := range servers {
		entries, err := s.Client(t).HGetAll(bg(), "sem").Result()
		require.NoError(t, err)
		for slot, v := range entries {
			assert.True(t, strings.HasPrefix(v, dead.Token()+" "),
				"node %d keeps slot %s = %q after both releases (a %s, b %s, dead %s)", i, slot, v, a.Token(), b.Token(), dead.Token())
		}
	}
}

func TestRealAcquirePermitWokenAfterRelease(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 5)
	c := newClient(t, pools)
	held, err := c.TryAcquirePermit(bg(), "sem", 1, 10*time.Second)
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg(), 20*time.Second)
		defer cancel()
		p, err := c.AcquirePermit(ctx, "sem", 1, 10*time.Second)
		if err == nil {
			err = p.Unlock(bg())
		}
		got <- err
	}()
	time.Sleep(300 * time.Millisecond) // let it fail at least once (either order passes)
	released := time.Now()
	require.NoError(t, held.Unlock(bg()))
	require.NoError(t, <-got)
	// Retries are at most 250ms apart with the default strategy.
	assert.Less(t, time.Since(released), 2*time.Second)

	held, err = c.TryAcquirePermit(bg(), "sem", 1, 10*time.Second)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(bg(), time.Second)
	defer cancel()
	_, err = c.AcquirePermit(ctx, "sem", 1, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, redlock.ErrTaken)
	require.NoError(t, held.Unlock(bg()))
}

func TestRealFailedPermitLeavesNothing(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	// The only permit is held on three nodes: an attempt gets two.
	hc := newClient(t, pools[:3])
	held, err := hc.TryAcquirePermit(bg(), "sem", 1, 10*time.Second)
	require.NoError(t, err)
	hc.WaitIdle()
	c := newClient(t, pools)
	_, err = c.TryAcquirePermit(bg(), "sem", 1, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	c.WaitIdle()
	assert.Zero(t, leftovers(t, servers[3:], "sem"), "the failed attempt left nothing")
	assert.Equal(t, []int64{1, 1, 1}, permitsHeld(t, servers[:3], "sem"))
	require.NoError(t, held.Extend(bg(), 10*time.Second))
}

func TestRealPermitOnLockKeyIsANodeError(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 3)
	c := newClient(t, pools)
	l, err := c.TryLock(bg(), "res", 10*time.Second)
	require.NoError(t, err)
	_, err = c.TryAcquirePermit(bg(), "res", 2, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrWrongKind)
	require.ErrorContains(t, err, "holds a lock")
	require.NoError(t, l.Extend(bg(), 10*time.Second), "the lock is untouched")
	require.NoError(t, l.Unlock(bg()))
}

func TestRealFencingForReadersAndPermits(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 5)
	c := newClient(t, pools)
	w, err := c.TryLock(bg(), "doc", 10*time.Second, redlock.WithFencing())
	require.NoError(t, err)
	require.NoError(t, w.Unlock(bg()))
	r1, err := c.TryRLock(bg(), "doc", 10*time.Second, redlock.WithFencing())
	require.NoError(t, err)
	assert.Greater(t, r1.Fence(), w.Fence(), "a reader after a writer")
	r2, err := c.TryRLock(bg(), "doc", 10*time.Second, redlock.WithFencing())
	require.NoError(t, err)
	assert.Greater(t, r2.Fence(), r1.Fence(), "a reader after a reader")
	require.NoError(t, r1.Unlock(bg()))
	require.NoError(t, r2.Unlock(bg()))
	w2, err := c.TryLock(bg(), "doc", 10*time.Second, redlock.WithFencing())
	require.NoError(t, err)
	assert.Greater(t, w2.Fence(), r2.Fence(), "a writer after readers")
	require.NoError(t, w2.Unlock(bg()))

	kept, err := c.TryAcquirePermit(bg(), "sem", 2, 10*time.Second, redlock.WithFencing())
	require.NoError(t, err)
	last := kept.Fence()
	for range 3 { // while one permit is kept
		p, err := c.TryAcquirePermit(bg(), "sem", 2, 10*time.Second, redlock.WithFencing())
		require.NoError(t, err)
		assert.Greater(t, p.Fence(), last)
		last = p.Fence()
		require.NoError(t, p.Unlock(bg()))
	}
	require.NoError(t, kept.Unlock(bg()))
}

func TestRealPermitNodesMustAgreeOnTheSlot(t *testing.T) {
	servers, pools := realNodes(t, 5)
	c := newClient(t, pools)
	const forever = "OTHER 9999999999999" // another holder's permit, far from expiry
	fill := func(slots ...string) {       // slots[i]: the slot another holder has on node i ("" none)
		for i, s := range servers {
			cl := s.Client(t)
			require.NoError(t, cl.Del(bg(), "sem").Err())
			if slots[i] != "" {
				require.NoError(t, cl.HSet(bg(), "sem", slots[i], forever).Err())
			}
		}
	}
	// Nodes 2-4 can only give slot 0, nodes 0-1 only slot 1: slot 0 wins,
	// and the two nodes that took slot 1 are released.
	fill("0", "0", "1", "1", "1")
	p, err := c.TryAcquirePermit(bg(), "sem", 2, 10*time.Second)
	require.NoError(t, err)
	c.WaitIdle()
	assert.Equal(t, []int64{1, 1, 2, 2, 2}, permitsHeld(t, servers, "sem"))
	require.NoError(t, p.Extend(bg(), 10*time.Second), "extended on the agreed slot")
	require.NoError(t, p.Unlock(bg()))
	c.WaitIdle()
	assert.Equal(t, []int64{1, 1, 1, 1, 1}, permitsHeld(t, servers, "sem"), "only the other holder is left")

	// Two nodes can give slot 1, two slot 0, one none: no slot has a
	// majority, and nothing of the attempt is left.
	fill("0", "0", "1", "1", "")
	require.NoError(t, servers[4].Client(t).HSet(bg(), "sem", "0", forever, "1", forever).Err())
	_, err = c.TryAcquirePermit(bg(), "sem", 2, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorContains(t, err, "different permits")
	c.WaitIdle()
	assert.Equal(t, []int64{1, 1, 1, 1, 2}, permitsHeld(t, servers, "sem"), "the split attempt left nothing")
}

func TestRealReaderAndPermitHealAndShutdown(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	c := newClient(t, pools)
	r, err := c.TryRLock(bg(), "doc", 10*time.Second, redlock.WithRepairOnExtend())
	require.NoError(t, err)
	p, err := c.TryAcquirePermit(bg(), "sem", 3, 10*time.Second, redlock.WithRepairOnExtend())
	require.NoError(t, err)
	c.WaitIdle()
	require.NoError(t, servers[0].Client(t).FlushAll(bg()).Err()) // node 0 restarted empty

	require.NoError(t, r.Extend(bg(), 10*time.Second))
	require.NoError(t, p.Extend(bg(), 10*time.Second))
	c.WaitIdle()
	n0 := servers[0].Client(t)
	_, err = n0.ZScore(bg(), readersKey("doc"), r.Token()).Result()
	require.NoError(t, err, "the reader is back on node 0")
	v, err := n0.Get(bg(), "doc").Result()
	require.NoError(t, err)
	assert.Equal(t, "r:readers", v)
	assert.Equal(t, []int64{1, 1, 1, 1, 1}, permitsHeld(t, servers, "sem"), "the permit is back on node 0")

	// Shutdown releases readers and permits like locks.
	require.NoError(t, c.Shutdown(bg()))
	assert.Zero(t, leftovers(t, servers, "doc", readersKey("doc"), "sem"))
}

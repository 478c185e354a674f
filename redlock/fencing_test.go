package redlock_test

import (
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

func TestFenceZeroWithoutFencing(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	assert.Zero(t, l.Fence())
	var nilLock *redlock.Lock
	assert.Zero(t, nilLock.Fence())
	c.WaitIdle()
	assert.Zero(t, fn.present(redlock.FenceKey("k")), "no counter without fencing")
}

func TestFenceIsMaxOfMajorityPlusOne(t *testing.T) {
	fn := newFakeNodes(t, 5)
	// Counters far apart, as after many acquisitions with different nodes down.
	for i, v := range []string{"1000", "5", "7", "0", "50"} {
		require.NoError(t, fn.servers[i].Set(redlock.FenceKey("k"), v))
	}
	fn.faults[0].Fail(errDown) // the node with the highest counter is down
	fn.faults[4].Fail(errDown)
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "k", time.Minute, redlock.WithFencing())
	require.NoError(t, err)
	assert.Equal(t, uint64(8), l.Fence(), "max over the nodes that answered, plus one")
	c.WaitIdle()
	for i := 1; i <= 3; i++ {
		assert.Equal(t, "8", mustGet(t, fn, i, redlock.FenceKey("k")), "phase 2 raised node %d", i)
	}
	assert.Equal(t, "1000", mustGet(t, fn, 0, redlock.FenceKey("k")))
	assert.Equal(t, time.Duration(0), fn.servers[1].TTL(redlock.FenceKey("k")), "counters never expire")
}

func TestFenceNeverLowersACounter(t *testing.T) {
	fn := newFakeNodes(t, 3)
	require.NoError(t, fn.servers[2].Set(redlock.FenceKey("k"), "99"))
	c := newClient(t, fn.pools, redlock.WithNodeTimeout(redlock.NodeTimeoutLimit))
	// Node 2 answers phase 1 late: the fence is chosen from nodes 0 and 1,
	// then phase 2 reaches node 2, whose counter is higher.
	release := fn.faults[2].Hold()
	l, err := c.TryLock(bg(), "k", time.Minute, redlock.WithFencing())
	require.NoError(t, err)
	require.Equal(t, uint64(1), l.Fence())
	release()
	c.WaitIdle()
	assert.Equal(t, "99", mustGet(t, fn, 2, redlock.FenceKey("k")), "phase 2 never lowers a counter")
	assert.Equal(t, "1", mustGet(t, fn, 0, redlock.FenceKey("k")))
	require.NoError(t, l.Unlock(bg()))
}

func TestFencesStrictlyIncreaseUnderRandomMinorityFailures(t *testing.T) {
	virtual(t)
	synctest.Test(t, func(t *testing.T) {
		nodes := newBubbleNodes(t, 5)
		c := newClient(t, nodes.pools)
		rng := rand.New(rand.NewPCG(1, 2))
		var last uint64
		for i := range 200 {
			down := rng.Perm(5)[:rng.IntN(3)] // 0, 1 or 2 nodes down
			for _, d := range down {
				nodes.faults[d].Fail(errDown)
			}
			l, err := c.TryLock(t.Context(), "k", time.Minute, redlock.WithFencing())
			require.NoError(t, err, "round %d", i)
			require.Greater(t, l.Fence(), last, "round %d with %v down", i, down)
			last = l.Fence()
			require.NoError(t, l.Unlock(t.Context()))
			c.WaitIdle()
			for _, d := range down {
				nodes.faults[d].Fail(nil)
			}
		}
	})
}

func TestFenceWithStraggler(t *testing.T) {
	fn := newFakeNodes(t, 5)
	c := newClient(t, fn.pools, redlock.WithNodeTimeout(redlock.NodeTimeoutLimit))
	first, err := c.TryLock(bg(), "k", time.Minute, redlock.WithFencing())
	require.NoError(t, err)
	require.NoError(t, first.Unlock(bg()))
	c.WaitIdle()

	release := fn.faults[4].Hold() // node 4 answers phase 1 late
	l, err := c.TryLock(bg(), "k", time.Minute, redlock.WithFencing())
	require.NoError(t, err)
	assert.Greater(t, l.Fence(), first.Fence())
	release()
	require.NoError(t, l.Unlock(bg()))
}

func TestFencePhaseTwoFailureHandsOutNothing(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	// Nodes 0 and 1 answer their first eval (phase 1) and fail every call
	// after it (phase 2, the cleanup). Each node's own count decides, not
	// the order of the nodes' calls: on a loaded machine node 0's phase 2
	// may start before node 1's phase 1. Fail takes effect from the next
	// call, so the call that sets it still runs.
	for i := range 2 {
		var evals atomic.Int32
		fn.faults[i].Before(func(op string) {
			if op == "eval" && evals.Add(1) == 1 {
				fn.faults[i].Fail(errDown)
			}
		})
	}
	_, err := c.TryLock(bg(), "k", time.Minute, redlock.WithFencing())
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorContains(t, err, "fence not recorded at a majority")
	c.WaitIdle()
	assert.False(t, fn.servers[2].Exists("k"), "the reachable node was released")
	// Nodes 0 and 1 were unreachable during cleanup: their copies expire by TTL.
}

func TestFenceCounterGarbageFailsClearly(t *testing.T) {
	fn := newFakeNodes(t, 3)
	for _, s := range fn.servers {
		require.NoError(t, s.Set(redlock.FenceKey("k"), "not-a-number"))
	}
	c := newClient(t, fn.pools)
	_, err := c.TryLock(bg(), "k", time.Minute, redlock.WithFencing())
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorContains(t, err, "is not a number")
	c.WaitIdle()
	assert.Zero(t, fn.present("k"))
}

func TestFenceHugeCounterKeepsPrecision(t *testing.T) {
	fn := newFakeNodes(t, 3)
	const big = uint64(1) << 60 // beyond the 2^53 of Lua's numbers
	for _, s := range fn.servers {
		require.NoError(t, s.Set(redlock.FenceKey("k"), strconv.FormatUint(big, 10)))
	}
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "k", time.Minute, redlock.WithFencing())
	require.NoError(t, err)
	assert.Equal(t, big+1, l.Fence())
	c.WaitIdle()
	assert.Equal(t, strconv.FormatUint(big+1, 10), mustGet(t, fn, 0, redlock.FenceKey("k")))
}

func mustGet(t *testing.T, fn *fakeNodes, node int, key string) string {
	t.Helper()
	v, err := fn.servers[node].Get(key)
	require.NoError(t, err)
	return v
}

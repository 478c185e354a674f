package redlock_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/examples/fencedstore"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// persistentNodes starts n redis-servers with the given persistence.
func persistentNodes(t *testing.T, n int, p redistest.Persistence) ([]*redistest.Server, []pool.Pool) {
	t.Helper()
	servers := redistest.StartN(t, n, p)
	pools := make([]pool.Pool, n)
	for i, s := range servers {
		pl, err := pool.FromURL(s.URL())
		require.NoError(t, err)
		t.Cleanup(func() { _ = pl.Close() })
		pools[i] = pl
	}
	return servers, pools
}

// fencedRound kills and restarts the nodes in restart (keeping what their
// persistence keeps), then takes a fenced lock while the nodes in down are
// stopped, and returns its fence.
func fencedRound(t *testing.T, c *redlock.Client, servers []*redistest.Server, restart, down []int) uint64 {
	t.Helper()
	for _, i := range restart {
		servers[i].Restart(t)
	}
	for _, i := range down {
		servers[i].Kill()
	}
	// Lock, not TryLock: a client that saw a node refuse connections probes
	// it again only about once a second, so a restarted node may need a retry.
	ctx, cancel := context.WithTimeout(bg(), 20*time.Second)
	defer cancel()
	l, err := c.Lock(ctx, "res", 10*time.Second, redlock.WithFencing())
	require.NoError(t, err)
	releasedOrLate(t, l.Unlock(bg()), "l's Unlock")
	c.WaitIdle()
	for _, i := range down {
		servers[i].Restart(t)
	}
	return l.Fence()
}

func TestRealFencesIncreaseAcrossKillsWithAOFAlways(t *testing.T) {
	first(t) // 25 rounds of restarts, each a wait for the pools to redial
	servers, pools := persistentNodes(t, 5, redistest.AOFAlways)
	c := newClient(t, pools, redlock.WithNodeTimeout(500*time.Millisecond))
	rng := rand.New(rand.NewPCG(7, 11))
	var last uint64
	for round := range 25 {
		// A random pair is killed and restarted (its AOF replays), and a
		// different random pair is down while we acquire: the majority we
		// read from always includes restarted nodes.
		perm := rng.Perm(5)
		restart, down := perm[:2], perm[2:4]
		fence := fencedRound(t, c, servers, restart, down)
		require.Greater(t, fence, last, "round %d: restarted %v, down %v", round, restart, down)
		last = fence
	}
}

// The same schedule without persistence: a majority of nodes that lost their
// counters can hand out a fence that is not greater than an earlier one. This
// is where the guarantee ends, and why docs/fencing.md requires appendfsync
// always (or a restart delayed past the TTL does NOT help: counters have no TTL).
func TestRealFencesGoBackWithoutPersistence(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		persistence redistest.Persistence
		monotonic   bool
	}{
		{redistest.AOFAlways, true},
		{redistest.NoPersistence, false},
	} {
		servers, pools := persistentNodes(t, 5, tc.persistence)
		// With the restart quarantine on, the restarted node would not
		// count (TestRealQuarantine shows that); here we show the hazard.
		c := newClient(t, pools, redlock.WithNodeTimeout(500*time.Millisecond), redlock.WithQuarantine(0))
		// Warm up so every node has a counter well above 1.
		var first uint64
		for range 5 {
			first = fencedRound(t, c, servers, nil, nil)
		}
		// Nodes 0 and 1 are down: the fence is written on 2, 3, 4 only.
		f1 := fencedRound(t, c, servers, nil, []int{0, 1})
		require.Greater(t, f1, first)
		// Nodes 2 and 3 restart, then 3 and 4 are down: we read from
		// {0, 1, 2}, none of which remembers f1 unless 2 persisted it.
		f2 := fencedRound(t, c, servers, []int{2}, []int{3, 4})
		if tc.monotonic {
			assert.Greater(t, f2, f1, "AOF always keeps fences monotonic")
		} else {
			assert.LessOrEqual(t, f2, f1, "without persistence the fence went back (%d after %d)", f2, f1)
		}
	}
}

// Kleppmann's scenario: client A takes the lock, pauses past its validity
// (here it simply does not extend), B takes the lock and writes, then A wakes
// and writes. The fenced store rejects A's write.
func TestRealKleppmannPausedWriterIsFencedOff(t *testing.T) {
	parallel(t)
	_, pools := persistentNodes(t, 5, redistest.AOFAlways)
	storage := redistest.Start(t, redistest.NoPersistence)
	store := fencedstore.New(storage.Client(t))
	a := newClient(t, pools)
	b := newClient(t, pools)

	// A 1s lease: a 200ms one ran out inside A's TryLock on a loaded
	// machine ("validity used up after 230ms: 5 of 5 nodes agreed").
	la, err := a.TryLock(bg(), "file", time.Second, redlock.WithFencing())
	require.NoError(t, err)
	require.NoError(t, store.Write(bg(), "file", "A1", la.Fence()))

	time.Sleep(time.Until(la.Until()) + 300*time.Millisecond) // A is paused past its lease

	lb, err := b.TryLock(bg(), "file", time.Minute, redlock.WithFencing())
	require.NoError(t, err)
	require.Greater(t, lb.Fence(), la.Fence())
	require.NoError(t, store.Write(bg(), "file", "B1", lb.Fence()))

	// A wakes up, still believing it holds the lock, and writes.
	err = store.Write(bg(), "file", "A2", la.Fence())
	require.ErrorIs(t, err, fencedstore.ErrStaleFence)
	v, f, err := store.Read(bg(), "file")
	require.NoError(t, err)
	assert.Equal(t, "B1", v)
	assert.Equal(t, lb.Fence(), f)
	require.NoError(t, lb.Unlock(bg()))
}

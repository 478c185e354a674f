package spec_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/redlock"
)

func TestHealthy(t *testing.T) {
	c := cluster.Start(t)
	t.Run("lock and unlock", func(t *testing.T) { lockUnlockHealthy(t, c) })
	t.Run("mutual exclusion", func(t *testing.T) { mutualExclusion(t, c) })
}

// A healthy cluster: the lock is on every node with our token and a TTL no
// longer than asked, a second client is refused without changing anything,
// and Unlock frees every node.
func lockUnlockHealthy(t *testing.T, c *cluster.Cluster) {
	a, b := newClient(t, c), newClient(t, c)
	ctx, k := t.Context(), key(t)
	const ttl = 10 * time.Second

	before := time.Now()
	l, err := a.TryLock(ctx, k, ttl)
	after := time.Now()
	require.NoError(t, err)
	require.Equal(t, k, l.Key())
	// Validity counts from before the first request.
	require.False(t, l.Until().Before(before.Add(ttl-drift(ttl))), "Until %v", l.Until())
	require.False(t, l.Until().After(after.Add(ttl-drift(ttl))), "Until %v", l.Until())
	eventuallyValue(t, c, k, l.Token()) // TryLock returned at 3 of 5
	for i := range 5 {
		e := peek(t, c, i, k)
		require.Greater(t, e.TTL, time.Duration(0))
		require.LessOrEqual(t, e.TTL, ttl)
	}

	_, err = b.TryLock(ctx, k, ttl)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrTaken)
	require.Zero(t, quorumError(t, err).Agreed)
	requireValues(t, c, k, values(l.Token(), 5)...)

	require.NoError(t, l.Unlock(ctx))
	eventuallyAbsent(t, c, k)
	require.ErrorIs(t, l.Unlock(ctx), redlock.ErrNotHeld, "a second Unlock")

	lb, err := b.TryLock(ctx, k, ttl)
	require.NoError(t, err, "the key is free after Unlock")
	require.NotEqual(t, l.Token(), lb.Token())
	require.NoError(t, lb.Unlock(ctx))
}

// fault makes a node unavailable to clients in one of the ways a node
// fails.
type fault struct {
	name  string
	apply func(*cluster.Node, context.Context) error
}

var faults = []fault{
	{"killed", (*cluster.Node).Kill},
	{"paused", (*cluster.Node).Pause},
	{"partitioned", func(n *cluster.Node, _ context.Context) error { return n.Partition() }},
	{"blackholed", func(n *cluster.Node, _ context.Context) error { return n.Blackhole(cluster.Both) }},
}

// With 2 of 5 nodes down the lock is still taken, on the 3 live nodes; with
// 3 down it is not, within a bound set by the node timeout, and the live
// nodes are left without the key.
func TestQuorum(t *testing.T) {
	c := cluster.Start(t)
	cl := newClient(t, c)
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			ctx := t.Context()
			resetAfter(t, c)

			t.Run("2 down locks", func(t *testing.T) {
				each(t, c, []int{3, 4}, func(n *cluster.Node) error { return f.apply(n, ctx) })
				var l *redlock.Lock
				var err error
				var k string
				// Up to three tries, each on a key of its own (a refused
				// try's cleanup may still be on its way): a try may be
				// refused only because a live node missed the node
				// timeout, which on a loaded machine it did right after
				// two containers were paused (make test-loaded
				// LOADED_TARGETS=test: "2 of 5 nodes agreed ... node 2: no
				// answer within the node timeout"). Two down nodes alone
				// never refuse the lock: each try says which nodes failed.
				for try := range 3 {
					k = fmt.Sprintf("%s:%d", key(t), try)
					elapsed := timed(func() { l, err = cl.TryLock(ctx, k, 10*time.Second) })
					require.Less(t, elapsed, slowBound)
					if err == nil {
						break
					}
					for i, cause := range failedNodes(quorumError(t, err)) {
						require.True(t, i >= 3 || isTimeout(cause),
							"live node %d refused with %v, not by missing the node timeout: %v", i, cause, err)
					}
					t.Logf("try %d refused, a live node slower than the node timeout: %v", try, err)
				}
				require.NoError(t, err, "the lock with 2 of 5 nodes down, in 3 tries")
				for i := range 3 {
					require.Equal(t, l.Token(), peek(t, c, i, k).Value, "node %d", i)
				}
				require.NoError(t, l.Unlock(ctx), "3 live nodes are a majority for Unlock too")
				for i := range 3 {
					require.False(t, peek(t, c, i, k).Exists, "node %d", i)
				}
			})

			t.Run("3 down fails", func(t *testing.T) {
				k := key(t)
				each(t, c, []int{2}, func(n *cluster.Node) error { return f.apply(n, ctx) })
				var err error
				elapsed := timed(func() { _, err = cl.TryLock(ctx, k, 10*time.Second) })
				require.ErrorIs(t, err, redlock.ErrNotObtained)
				require.Less(t, elapsed, slowBound)
				qe := quorumError(t, err)
				require.LessOrEqual(t, qe.Agreed, 2)
				require.Equal(t, 3, qe.Needed)
				for i, cause := range failedNodes(qe) {
					require.GreaterOrEqual(t, i, 2, "live node %d failed: %v", i, cause)
					require.NotErrorIs(t, cause, redlock.ErrTaken)
				}
				// A live node whose yes came after the decision (the faulty
				// nodes can refuse faster) is released in the background.
				eventuallyAbsent(t, c, k, 0, 1)
			})
		})
	}
}

// Competing clients on real nodes never hold the lock at the same time.
func mutualExclusion(t *testing.T, c *cluster.Cluster) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	k := key(t)
	const clients, rounds = 4, 10

	var inside atomic.Int32
	var held atomic.Int32
	errs := make(chan error, clients*rounds)
	var wg sync.WaitGroup
	for range clients {
		cl := newClient(t, c)
		wg.Go(func() {
			for range rounds {
				l, err := cl.Lock(ctx, k, 5*time.Second)
				if err != nil {
					errs <- err
					return
				}
				if inside.Add(1) != 1 {
					errs <- errors.New("two holders at once")
				}
				held.Add(1)
				if !time.Now().Before(l.Until()) {
					errs <- errors.New("lock returned already expired")
				}
				time.Sleep(time.Millisecond)
				inside.Add(-1)
				if err := l.Unlock(ctx); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, clients*rounds, held.Load())
	eventuallyAbsent(t, c, k)
}

package spec_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/internal/scripts"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// Slow and silent nodes: the per-node timeout bounds every operation,
// validity accounts for the time spent, and nodes that did not answer are
// cleaned up.
func TestSlowAndSilentNodes(t *testing.T) {
	c := cluster.Start(t)
	t.Run("one does not slow the lock", func(t *testing.T) { slowNodeDoesNotSlowTheLock(t, c) })
	t.Run("Until reflects the time spent", func(t *testing.T) { untilReflectsTimeSpent(t, c) })
	t.Run("a failed attempt releases them", func(t *testing.T) { failedAttemptReleasesSilentNodes(t, c) })
}

// One node 200ms slow, far slower, or silent, does not slow Lock, Extend or
// Unlock: each decides at the majority, bounded by the node timeout, and
// Until counts from before the first request.
func slowNodeDoesNotSlowTheLock(t *testing.T, c *cluster.Cluster) {
	cl := newClient(t, c)
	for _, f := range []fault{
		{"200ms latency", func(n *cluster.Node, _ context.Context) error { return n.Slow(200 * time.Millisecond) }},
		// Replies later than slowBound: a call within slowBound provably did
		// not wait for this node, however loaded the machine.
		{"latency beyond the bound", func(n *cluster.Node, _ context.Context) error { return n.Slow(2 * slowBound) }},
		{"blackholed", func(n *cluster.Node, _ context.Context) error { return n.Blackhole(cluster.Both) }},
		{"replies lost", func(n *cluster.Node, _ context.Context) error { return n.Blackhole(cluster.Downstream) }},
	} {
		t.Run(f.name, func(t *testing.T) {
			ctx, k := t.Context(), key(t)
			resetAfter(t, c)
			require.NoError(t, f.apply(c.Node(0), ctx))
			const ttl = 10 * time.Second

			var l *redlock.Lock
			var err error
			before := time.Now()
			elapsed := timed(func() { l, err = cl.TryLock(ctx, k, ttl) })
			require.NoError(t, err)
			require.Less(t, elapsed, slowBound, "lock")
			require.False(t, l.Until().Before(before.Add(ttl-drift(ttl))))
			require.False(t, l.Until().After(before.Add(elapsed+ttl-drift(ttl))))

			before = time.Now()
			elapsed = timed(func() { err = l.Extend(ctx, 2*ttl) })
			require.NoError(t, err)
			require.Less(t, elapsed, slowBound, "extend")
			require.False(t, l.Until().Before(before.Add(2*ttl-drift(2*ttl))))
			require.False(t, l.Until().After(before.Add(elapsed+2*ttl-drift(2*ttl))))

			elapsed = timed(func() { err = l.Unlock(ctx) })
			require.NoError(t, err)
			require.Less(t, elapsed, slowBound, "unlock")
			// Unlock returned at a majority of the healthy nodes; on a loaded
			// machine a release to the fourth may still time out, leaving our
			// token there until its TTL. Never another value.
			redistest.WaitFor(t, stragglerBound, "a release on a majority of nodes 1-4", func() (bool, string) {
				absent := 0
				for _, i := range []int{1, 2, 3, 4} {
					switch e := peek(t, c, i, k); {
					case !e.Exists:
						absent++
					case e.Value != l.Token():
						t.Fatalf("node %d holds %q, not our token", i, e.Value)
					}
				}
				return absent >= 3, fmt.Sprintf("%d of 4 released", absent)
			})
			// Node 0 may have run the SET without its reply reaching us, and
			// the release may have been lost in a new connection's handshake:
			// then our token stays there until its TTL.
			if e := peek(t, c, 0, k); e.Exists {
				require.Equal(t, l.Token(), e.Value)
				require.LessOrEqual(t, e.TTL, 2*ttl)
			}
		})
	}
}

// Validity is what is left of the TTL after the time the nodes took: with
// every node slow, Until is that much earlier, and a majority that answers
// only after the TTL is no lock at all.
func untilReflectsTimeSpent(t *testing.T, c *cluster.Cluster) {
	resetAfter(t, c)
	const latency = 150 * time.Millisecond
	for _, n := range c.Nodes() {
		require.NoError(t, n.Slow(latency))
	}
	// A node timeout above the latency, so that slow nodes still count.
	cl := newClient(t, c, redlock.WithNodeTimeout(2*time.Second))
	ctx := t.Context()

	t.Run("lock and extend", func(t *testing.T) {
		k := key(t)
		const ttl = 10 * time.Second
		l, err := cl.TryLock(ctx, k, ttl)
		after := time.Now()
		require.NoError(t, err)
		require.False(t, l.Until().After(after.Add(ttl-drift(ttl)-latency)),
			"Until must leave out the %v the nodes took: %v left", latency, time.Until(l.Until()))

		err = l.Extend(ctx, ttl)
		after = time.Now()
		require.NoError(t, err)
		require.False(t, l.Until().After(after.Add(ttl-drift(ttl)-latency)),
			"Extend too: %v left", time.Until(l.Until()))
		require.NoError(t, l.Unlock(ctx))
	})

	t.Run("majority after the TTL", func(t *testing.T) {
		k := key(t)
		_, err := cl.TryLock(ctx, k, latency/2)
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.Contains(t, err.Error(), "validity used up")
	})
}

// A failed attempt releases the lock on every node where its SET may have
// landed, including nodes whose replies were lost: there the SET ran, and so
// does the release, long before the TTL would have removed the key.
func failedAttemptReleasesSilentNodes(t *testing.T, c *cluster.Cluster) {
	resetAfter(t, c)
	ctx, k := t.Context(), key(t)

	// Each pool gets a few connections that have done their handshake
	// before the fault: on a new connection the handshake's reply would be
	// lost too, and no command ever sent.
	pools := make([]pool.Pool, c.Len())
	for i, n := range c.Nodes() {
		rc := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = rc.Close() })
		conns := make([]*redis.Conn, 3)
		for j := range conns {
			conns[j] = rc.Conn() // held at once, so each is a connection of its own
			require.NoError(t, conns[j].Ping(ctx).Err())
		}
		for _, cn := range conns {
			require.NoError(t, cn.Close()) // back to rc's idle connections
		}
		pools[i] = pool.New(rc)
	}
	cl, err := redlock.New(pools, redlock.WithNodeTimeout(nodeTimeout))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	// Load the release script everywhere: a NOSCRIPT reply would be lost
	// with the others, and the script never run.
	warm, err := cl.TryLock(ctx, k+":warm", time.Second)
	require.NoError(t, err)
	require.NoError(t, warm.Unlock(ctx))
	eventuallyAbsent(t, c, warm.Key()) // Unlock returned at the majority
	for i := range c.Len() {
		require.True(t, scriptCached(t, c, i, scripts.Release), "node %d", i)
	}

	for _, i := range []int{2, 3, 4} {
		require.NoError(t, c.Node(i).Blackhole(cluster.Downstream))
	}
	const ttl = time.Minute
	elapsed := timed(func() { _, err = cl.TryLock(ctx, k, ttl) })
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.Less(t, elapsed, slowBound)
	for i, cause := range failedNodes(quorumError(t, err)) {
		require.True(t, isTimeout(cause), "node %d: %v", i, cause)
	}
	// The releases to the silent nodes were sent before TryLock returned;
	// give them a moment to arrive, far less than the TTL.
	eventuallyAbsent(t, c, k)
}

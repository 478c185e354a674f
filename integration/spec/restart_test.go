package spec_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/internal/scripts"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// scriptCached reports whether node i has s in its script cache.
func scriptCached(t *testing.T, c *cluster.Cluster, i int, s *pool.Script) bool {
	t.Helper()
	ok, err := c.Node(i).Client().ScriptExists(t.Context(), s.Hash()).Result()
	require.NoError(t, err)
	return ok[0]
}

// After a restart a node's script cache is empty and EVALSHA answers
// NOSCRIPT; Extend and Unlock load the scripts again and work, and a
// NOSCRIPT is never taken for "not held".
func TestNoScriptAfterRestart(t *testing.T) {
	// AOF always, so that the lock itself survives the restarts.
	c := cluster.Start(t, cluster.WithPersistence(cluster.AOFAlways))
	cl := newClient(t, c)
	ctx, k := t.Context(), key(t)

	l, err := cl.TryLock(ctx, k, time.Minute)
	require.NoError(t, err)
	require.NoError(t, l.Extend(ctx, time.Minute))
	eventuallyValue(t, c, k, l.Token())
	redistest.WaitFor(t, stragglerBound, "Extend's script in every node's cache", func() (bool, string) {
		for i := range c.Len() {
			if !scriptCached(t, c, i, scripts.Extend) {
				return false, fmt.Sprintf("not on node %d", i)
			}
		}
		return true, ""
	})

	var wg sync.WaitGroup
	for _, n := range c.Nodes() {
		wg.Go(func() { require.NoError(t, n.Restart(ctx)) })
	}
	wg.Wait()
	for i := range c.Len() {
		require.Equal(t, l.Token(), peek(t, c, i, k).Value, "node %d kept the lock", i)
		require.False(t, scriptCached(t, c, i, scripts.Extend), "node %d: script cache survived", i)
		require.False(t, scriptCached(t, c, i, scripts.Release), "node %d", i)
	}

	require.NoError(t, l.Extend(ctx, time.Minute), "NOSCRIPT falls back to EVAL")
	require.NoError(t, l.Unlock(ctx))
	eventuallyAbsent(t, c, k)
	for i := range c.Len() {
		require.True(t, scriptCached(t, c, i, scripts.Extend), "node %d: EVAL caches the script", i)
	}
}

// TestRestart shows the restart hazard and both of its cures. In each
// scenario client A takes the lock on a bare majority {0,1,2} (nodes 3 and 4
// are cut off from it); then one of A's nodes crashes, and client B tries
// the same key. Node 1 persists with appendfsync always, node 2 not at all.
func TestRestart(t *testing.T) {
	c := cluster.Start(t, cluster.WithNodePersistence(1, cluster.AOFAlways))
	t.Run("without persistence lets a second holder in", func(t *testing.T) { restartWithoutPersistence(t, c) })
	t.Run("without persistence is quarantined", func(t *testing.T) { restartQuarantined(t, c) })
	t.Run("with AOF always keeps the lock", func(t *testing.T) { restartWithAOFAlways(t, c) })
	t.Run("delayed past the TTL keeps mutual exclusion", func(t *testing.T) { restartDelayedPastTTL(t, c) })
}

// restartScenario runs a scenario: A locks {0,1,2} for ttl, node crashed
// crashes and recovers as recover says, then B, made with bOpts, tries. It
// returns A's lock, B's (nil when refused) with its error, and when B's
// attempt started.
func restartScenario(t *testing.T, c *cluster.Cluster, ttl time.Duration, crashed int,
	recover func(context.Context, *cluster.Node), bOpts ...redlock.Option) (la, lb *redlock.Lock, bStart time.Time, bErr error) {
	t.Helper()
	resetAfter(t, c)
	a, b := newClient(t, c), newClient(t, c, bOpts...)
	ctx, k := t.Context(), key(t)

	each(t, c, []int{3, 4}, (*cluster.Node).Partition)
	la, err := a.TryLock(ctx, k, ttl)
	require.NoError(t, err)
	each(t, c, []int{3, 4}, (*cluster.Node).Heal)
	requireValues(t, c, k, la.Token(), la.Token(), la.Token(), "", "")

	recover(ctx, c.Node(crashed))

	bStart = time.Now()
	lb, bErr = b.TryLock(ctx, k, ttl)
	return la, lb, bStart, bErr
}

// The hazard: node 2 restarts without persistence and forgets A's lock, so
// B, with the restart quarantine off, wins nodes {2,3,4} while A still
// holds {0,1} and believes its lock valid. Two clients hold the lock at once.
func restartWithoutPersistence(t *testing.T, c *cluster.Cluster) {
	const ttl = time.Minute // A's lock must outlast the restart by far
	la, lb, _, err := restartScenario(t, c, ttl, 2, func(ctx context.Context, n *cluster.Node) {
		require.NoError(t, n.Restart(ctx))
		require.False(t, peek(t, c, 2, key(t)).Exists, "the restarted node forgot A's lock")
	}, redlock.WithQuarantine(0))
	require.NoError(t, err, "B gets the lock A holds")
	now := time.Now()
	require.True(t, now.Before(la.Until()), "A's validity has not ended")
	require.True(t, now.Before(lb.Until()))
	t.Logf("hazard shown: A valid for %v more, B valid for %v: both hold %s",
		la.Until().Sub(now).Round(time.Millisecond), lb.Until().Sub(now).Round(time.Millisecond), la.Key())
	eventuallyValue(t, c, la.Key(), la.Token(), 0, 1)
	eventuallyValue(t, c, la.Key(), lb.Token(), 2, 3, 4)
}

// Cure 0, the client's own: the same crash, and B with the default
// quarantine does not count the young node 2, which has no persistence; B
// is refused and its error names the quarantine.
func restartQuarantined(t *testing.T, c *cluster.Cluster) {
	const ttl = time.Minute
	la, _, _, err := restartScenario(t, c, ttl, 2, func(ctx context.Context, n *cluster.Node) {
		require.NoError(t, n.Restart(ctx))
	})
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrNodeQuarantined)
	require.True(t, time.Now().Before(la.Until()))
	eventuallyValue(t, c, la.Key(), la.Token(), 0, 1)
	eventuallyAbsent(t, c, la.Key(), 2, 3, 4) // B's failed attempt is cleaned up
}

// Cure 1: with appendfsync always the restarted node (1) still holds A's
// lock, and B is refused.
func restartWithAOFAlways(t *testing.T, c *cluster.Cluster) {
	const ttl = time.Minute
	la, _, _, err := restartScenario(t, c, ttl, 1, func(ctx context.Context, n *cluster.Node) {
		require.NoError(t, n.Restart(ctx))
	})
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrTaken)
	e := peek(t, c, 1, la.Key())
	require.Equal(t, la.Token(), e.Value, "the restarted node kept A's lock")
	require.Greater(t, e.TTL, time.Duration(0))
	require.LessOrEqual(t, e.TTL, ttl)
	eventuallyValue(t, c, la.Key(), la.Token(), 0, 2)
	eventuallyAbsent(t, c, la.Key(), 3, 4) // B's failed attempt is cleaned up
}

// Cure 2: a node without persistence that stays down longer than the TTL
// comes back only after A's lock has expired everywhere: while it is down B
// is refused, and when B gets in, A's validity is over.
func restartDelayedPastTTL(t *testing.T, c *cluster.Cluster) {
	const ttl = 3 * time.Second
	b := newClient(t, c)
	la, lb, bStart, err := restartScenario(t, c, ttl, 2, func(ctx context.Context, n *cluster.Node) {
		require.NoError(t, n.Kill(ctx))
		// While node 2 is down, A's copies on {0,1} still block B.
		_, err := b.TryLock(ctx, key(t), ttl)
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		// Stay down past the TTL: every copy of A's lock has expired.
		eventuallyAbsent(t, c, key(t), 0, 1)
		require.NoError(t, n.Start(ctx))
	})
	require.NoError(t, err, "the lock is free once A's TTL has passed")
	require.False(t, la.Until().After(bStart), "A's validity ended before B's attempt began")
	require.ErrorIs(t, la.Extend(t.Context(), ttl), redlock.ErrNotHeld)
	require.NoError(t, lb.Unlock(t.Context()))
}

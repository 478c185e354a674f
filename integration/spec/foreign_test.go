package spec_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/redlock"
)

// setForeign writes another owner's lock on the given nodes, directly.
func setForeign(t *testing.T, c *cluster.Cluster, key, value string, ttl time.Duration, nodes ...int) {
	t.Helper()
	for _, i := range nodes {
		require.NoError(t, c.Node(i).Client().Set(t.Context(), key, value, ttl).Err())
	}
}

// requireUntouched checks that the nodes still hold what before recorded,
// with a TTL that only ran down: not deleted, not overwritten, not extended.
func requireUntouched(t *testing.T, c *cluster.Cluster, key string, before map[int]cluster.Entry, since time.Time) {
	t.Helper()
	for i, b := range before {
		e := peek(t, c, i, key)
		require.Equal(t, b.Value, e.Value, "node %d", i)
		require.LessOrEqual(t, e.TTL, b.TTL, "node %d: TTL was extended", i)
		require.Greater(t, e.TTL, b.TTL-time.Since(since)-time.Second, "node %d: TTL was shortened", i)
	}
}

func snapshot(t *testing.T, c *cluster.Cluster, key string, nodes ...int) (map[int]cluster.Entry, time.Time) {
	t.Helper()
	out := make(map[int]cluster.Entry)
	for _, i := range nodes {
		out[i] = peek(t, c, i, key)
	}
	return out, time.Now()
}

// Another owner's lock is never touched: not by our failed attempt, not by
// Extend or Unlock, whether or not our own validity lasts.
func TestForeignHolder(t *testing.T) {
	c := cluster.Start(t)
	cl := newClient(t, c)
	t.Run("refuses the lock", func(t *testing.T) { foreignHolderRefusesLock(t, c, cl) })
	t.Run("while our validity lasts", func(t *testing.T) { foreignHolderWhileValid(t, c, cl) })
	t.Run("after our lock expired", func(t *testing.T) { foreignHolderAfterExpiry(t, c, cl) })
}

// Another owner's lock on 3 of 5 nodes refuses us, and our failed attempt
// leaves its keys as they were while cleaning up the 2 nodes we did get.
func foreignHolderRefusesLock(t *testing.T, c *cluster.Cluster, cl *redlock.Client) {
	ctx, k := t.Context(), key(t)
	setForeign(t, c, k, "foreign-token", time.Minute, 0, 1, 2)
	before, at := snapshot(t, c, k, 0, 1, 2)

	_, err := cl.TryLock(ctx, k, 30*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrTaken)
	qe := quorumError(t, err)
	require.LessOrEqual(t, qe.Agreed, 2)
	for i, cause := range failedNodes(qe) {
		require.Less(t, i, 3, "node %d refused: %v", i, cause)
		require.ErrorIs(t, cause, redlock.ErrTaken)
	}
	requireUntouched(t, c, k, before, at)
	// Nodes that said yes are released: before TryLock returns, or in the
	// background when their yes came after the three refusals.
	eventuallyAbsent(t, c, k, 3, 4)
}

// Once another owner holds the key on a majority, our Extend and Unlock
// refuse to touch it: compare-and-act, never a blind PEXPIRE or DEL.
func foreignHolderWhileValid(t *testing.T, c *cluster.Cluster, cl *redlock.Client) {
	// Nodes 0-2 lost our key and gave it to someone else (as after the
	// restart shown in restart_test.go).
	ctx, k := t.Context(), key(t)
	l, err := cl.TryLock(ctx, k, 30*time.Second)
	require.NoError(t, err)
	eventuallyValue(t, c, k, l.Token())
	setForeign(t, c, k, "foreign-token", time.Minute, 0, 1, 2)
	before, at := snapshot(t, c, k, 0, 1, 2)

	err = l.Extend(ctx, 30*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotHeld, "a majority refused")
	requireUntouched(t, c, k, before, at)

	require.ErrorIs(t, l.Unlock(ctx), redlock.ErrNotHeld)
	requireUntouched(t, c, k, before, at)
	eventuallyAbsent(t, c, k, 3, 4) // our own copies are released
}

// After our lock expired and passed to another owner, the same.
func foreignHolderAfterExpiry(t *testing.T, c *cluster.Cluster, cl *redlock.Client) {
	ctx, k := t.Context(), key(t)
	l, err := cl.TryLock(ctx, k, 300*time.Millisecond)
	require.NoError(t, err)
	eventuallyAbsent(t, c, k)
	setForeign(t, c, k, "foreign-token", time.Minute, 0, 1, 2, 3, 4)
	before, at := snapshot(t, c, k, 0, 1, 2, 3, 4)

	require.ErrorIs(t, l.Extend(ctx, time.Minute), redlock.ErrNotHeld)
	require.ErrorIs(t, l.Unlock(ctx), redlock.ErrNotHeld)
	requireUntouched(t, c, k, before, at)
}

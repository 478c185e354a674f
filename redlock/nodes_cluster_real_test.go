package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

// The first day on Redis Cluster nodes (issue 36): three clusters formed
// by redis-cli --cluster create, persisting nothing, no declaration.
// CheckNodes reads every shard master and finds each quarantined; a lock
// is refused; DeclareFresh declares each shard on its master, though the
// refused attempt left the shards' markers of this reign; then the nodes
// count and a lock is granted; a second DeclareFresh, with the lock held,
// is refused and declares nothing.
func TestRealClusterFirstDay(t *testing.T) {
	parallel(t)
	clusters := redistest.StartCLIClusters(t, 3, 3, 0, redistest.NoPersistence)
	pools := cliPools(t, clusters)
	requireNoDeclaration(t, clusters)
	ctx, cancel := context.WithTimeout(bg(), time.Minute)
	defer cancel()

	r, err := redlock.CheckNodes(ctx, pools)
	require.NoError(t, err)
	require.False(t, r.OK(), "young clusters that persist nothing do not count")
	for i, n := range r.Nodes {
		require.NoError(t, n.Err, "node %d", i)
		require.NoError(t, n.MastersErr, "node %d", i)
		assert.True(t, n.Cluster)
		assert.False(t, n.Counts, "node %d", i)
		require.Len(t, n.Masters, 3, "node %d: one row per shard master", i)
		for _, m := range n.Masters {
			assert.NoError(t, m.Err, "node %d master %s", i, m.Addr)
			assert.Equal(t, i, m.Node)
			assert.Positive(t, m.Quarantined, "node %d master %s: out for up to the quarantine", i, m.Addr)
			assert.LessOrEqual(t, m.Quarantined, redlock.DefaultQuarantine, "node %d master %s", i, m.Addr)
			assert.False(t, m.TookOver)
			assert.Equal(t, "noeviction", m.MaxmemoryPolicy)
			assert.NotEmpty(t, m.RunID)
		}
	}

	for i, cl := range clusters {
		for _, m := range cl.Masters {
			keys, err := cmd(t, m, "KEYS", "redlock:*").StringSlice()
			require.NoError(t, err)
			assert.Empty(t, keys, "node %d master %s: CheckNodes wrote nothing", i, m.Addr())
		}
	}

	c := newClient(t, pools)
	_, err = c.TryLock(bg(), "first-day", 5*time.Second)
	require.ErrorIs(t, err, redlock.ErrNodeQuarantined, "the quarantine refuses the shards")
	c.WaitIdle()

	decl, err := redlock.DeclareFresh(ctx, pools)
	require.NoError(t, err, "the refused attempt's reign markers are this run's: the shards are still new")
	require.Len(t, decl, 9, "one declaration per shard master")
	for _, d := range decl {
		assert.Regexp(t, `^redlock:fresh-start\{\d+\}$`, d.Key)
		assert.NotEmpty(t, d.RunID)
	}

	r, err = redlock.CheckNodes(ctx, pools)
	require.NoError(t, err)
	require.True(t, r.OK())
	for i, n := range r.Nodes {
		assert.True(t, n.Counts, "node %d", i)
		for _, m := range n.Masters {
			assert.True(t, m.FreshStart, "node %d master %s", i, m.Addr)
			assert.Zero(t, m.Quarantined, "node %d master %s", i, m.Addr)
		}
	}

	// A Client created now reads the declarations at its pools' first use.
	fresh := newClient(t, cliPools(t, clusters))
	var l *redlock.Lock
	redistest.WaitFor(t, 10*time.Second, "a lock on the declared clusters", func() (bool, string) {
		l, err = fresh.TryLock(bg(), "first-day", 5*time.Second)
		return err == nil, errString(err)
	})

	again, err := redlock.DeclareFresh(ctx, pools)
	require.ErrorIs(t, err, redlock.ErrNotFresh, "a held lock: the deployment is not new")
	assert.ErrorContains(t, err, "first-day")
	assert.Empty(t, again, "nothing declared")
	require.NoError(t, l.Unlock(bg()))
}

// A cluster whose masters persist every write counts at once in
// CheckNodes, as it does for the lock.
func TestRealClusterCheckPersisting(t *testing.T) {
	parallel(t)
	clusters := redistest.StartCLIClusters(t, 3, 3, 0, redistest.AOFAlways)
	pools := cliPools(t, clusters)
	r, err := redlock.CheckNodes(bg(), pools)
	require.NoError(t, err)
	require.True(t, r.OK())
	for i, n := range r.Nodes {
		require.Len(t, n.Masters, 3, "node %d", i)
		for _, m := range n.Masters {
			assert.Zero(t, m.Quarantined, "node %d master %s persists every write", i, m.Addr)
			assert.True(t, m.Counts)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

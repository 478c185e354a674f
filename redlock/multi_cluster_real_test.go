package redlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// clusterNode starts a Redis Cluster of one master that owns every slot:
// it enforces the one-slot rule of scripts as any cluster node does. The
// Pool is a plain client on it, declared fresh for the restart quarantine.
// It is stopped when t ends.
func clusterNode(t *testing.T) pool.Pool {
	t.Helper()
	master := redistest.StartCluster(t, 1, redistest.NoPersistence).Masters[0]
	master.MarkFresh(t)
	p, err := pool.FromURL(master.URL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func TestRealMultiLockOnClusterNodesNeedsOneSlot(t *testing.T) {
	parallel(t)
	pools := []pool.Pool{clusterNode(t), clusterNode(t), clusterNode(t)}
	c := newClient(t, pools)

	_, err := c.TryLockAll(bg(), []string{"cart:1", "cart:2"}, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	var ne *redlock.NodeError
	require.ErrorAs(t, err, &ne)
	assert.ErrorContains(t, err, "CROSSSLOT", "each node refuses keys of several slots")

	for _, fenced := range []bool{false, true} {
		var opts []redlock.LockOption
		if fenced {
			opts = append(opts, redlock.WithFencing())
		}
		l, err := c.TryLockAll(bg(), []string{"{cart}:1", "{cart}:2"}, 10*time.Second, opts...)
		require.NoError(t, err, "one hash tag: one slot, with the companion keys (fenced %v)", fenced)
		require.NoError(t, l.Extend(bg(), 10*time.Second))
		require.NoError(t, l.Unlock(bg()))
	}
}

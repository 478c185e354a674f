package spec_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

func TestExtend(t *testing.T) {
	c := cluster.Start(t)
	cl := newClient(t, c)
	t.Run("across node loss", func(t *testing.T) { extendAcrossNodeLoss(t, c, cl) })
	t.Run("never after expiry", func(t *testing.T) { extendAfterExpiry(t, c, cl) })
	t.Run("heals a restarted node", func(t *testing.T) { extendHealsRestartedNode(t, c, cl) })
}

// Extend keeps a lock across the loss of nodes while a majority remains, and
// stops at the loss of the majority without shortening the validity.
func extendAcrossNodeLoss(t *testing.T, c *cluster.Cluster, cl *redlock.Client) {
	resetAfter(t, c)
	ctx, k := t.Context(), key(t)
	const ttl, longer = 5 * time.Second, 20 * time.Second

	l, err := cl.TryLock(ctx, k, ttl)
	require.NoError(t, err)
	eventuallyValue(t, c, k, l.Token())

	for _, lost := range []int{0, 1} {
		require.NoError(t, c.Node(lost).Kill(ctx))
		before := time.Now()
		require.NoError(t, l.Extend(ctx, longer), "after losing node %d", lost)
		require.False(t, l.Until().Before(before.Add(longer-drift(longer))))
		// Extend returned at the majority; a fourth node may lag
		// (stragglerBound).
		redistest.WaitFor(t, stragglerBound, "every live node extended to a TTL in ("+ttl.String()+", "+longer.String()+"]",
			func() (bool, string) {
				for i := lost + 1; i < 5; i++ {
					if e := peek(t, c, i, k); e.Value != l.Token() || e.TTL <= ttl || e.TTL > longer {
						return false, fmt.Sprintf("node %d: %q, TTL %v", i, e.Value, e.TTL)
					}
				}
				return true, ""
			})
	}

	require.NoError(t, c.Node(2).Kill(ctx))
	until := l.Until()
	err = l.Extend(ctx, longer)
	require.ErrorIs(t, err, redlock.ErrNotExtended, "nodes are down, not refusing")
	require.NotErrorIs(t, err, redlock.ErrNotHeld)
	require.Equal(t, until, l.Until(), "a failed Extend keeps the validity it had")

	err = l.Unlock(ctx)
	require.ErrorIs(t, err, redlock.ErrNotReleased)
	eventuallyAbsent(t, c, k, 3, 4)
}

// Extend never brings back a lock whose validity ran out.
func extendAfterExpiry(t *testing.T, c *cluster.Cluster, cl *redlock.Client) {
	ctx, k := t.Context(), key(t)

	l, err := cl.TryLock(ctx, k, 300*time.Millisecond)
	require.NoError(t, err)
	eventuallyAbsent(t, c, k) // expired on the nodes
	require.ErrorIs(t, l.Extend(ctx, time.Minute), redlock.ErrNotHeld)
	requireValues(t, c, k, values("", 5)...)
}

// With WithRepairOnExtend, Extend re-creates the copy a restarted node lost, without
// counting that node toward the majority; without it, the node stays empty.
func extendHealsRestartedNode(t *testing.T, c *cluster.Cluster, cl *redlock.Client) {
	ctx := t.Context()

	for _, heal := range []bool{false, true} {
		k := key(t) + map[bool]string{false: ":plain", true: ":heal"}[heal]
		var opts []redlock.LockOption
		if heal {
			opts = append(opts, redlock.WithRepairOnExtend())
		}
		l, err := cl.TryLock(ctx, k, time.Minute, opts...)
		require.NoError(t, err)
		eventuallyValue(t, c, k, l.Token())
		require.NoError(t, c.Node(0).Restart(ctx))
		require.False(t, peek(t, c, 0, k).Exists, "a node without persistence forgets")

		require.NoError(t, l.Extend(ctx, time.Minute))
		if heal {
			eventuallyValue(t, c, k, l.Token(), 0)
		} else {
			// Give a wrong re-creation the time it would need to show: it
			// would be one of Extend's calls, each of which ends within a
			// node timeout of Extend's return; five of them, for a loaded
			// machine.
			time.Sleep(5 * nodeTimeout)
			require.False(t, peek(t, c, 0, k).Exists, "without WithRepairOnExtend the node stays empty")
		}
		require.NoError(t, l.Unlock(ctx))
		eventuallyAbsent(t, c, k)
	}
}

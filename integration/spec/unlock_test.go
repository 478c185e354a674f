package spec_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/internal/redistest"
)

// Unlock with one node cut off succeeds at the majority; the cut-off node's
// copy is left to expire by its TTL, and the lock is free for others at once.
func TestUnlockWithPartitionedNode(t *testing.T) {
	c := cluster.Start(t)
	a, b := newClient(t, c), newClient(t, c)
	for _, f := range []fault{
		{"partitioned", func(n *cluster.Node, _ context.Context) error { return n.Partition() }},
		{"blackholed", func(n *cluster.Node, _ context.Context) error { return n.Blackhole(cluster.Both) }},
	} {
		t.Run(f.name, func(t *testing.T) {
			ctx, k := t.Context(), key(t)
			resetAfter(t, c)
			const ttl = 2 * time.Second
			l, err := a.TryLock(ctx, k, ttl)
			require.NoError(t, err)
			eventuallyValue(t, c, k, l.Token()) // TryLock returned at 3 of 5
			require.NoError(t, f.apply(c.Node(4), ctx))

			elapsed := timed(func() { err = l.Unlock(ctx) })
			require.NoError(t, err)
			require.Less(t, elapsed, slowBound)
			eventuallyAbsent(t, c, k, 0, 1, 2, 3)
			e := peek(t, c, 4, k)
			require.Equal(t, l.Token(), e.Value, "the cut-off node keeps its copy")
			require.LessOrEqual(t, e.TTL, ttl)

			lb, err := b.TryLock(ctx, k, ttl)
			require.NoError(t, err, "four free nodes are a majority")
			require.NoError(t, lb.Unlock(ctx))

			// Redis expires a key read after its TTL (peek reads it):
			// the TTL from the copy's write, which is before now, and a
			// margin of stragglerBound for a slow node.
			redistest.WaitFor(t, ttl+stragglerBound, "the cut-off copy to expire by its TTL", func() (bool, string) {
				e := peek(t, c, 4, k)
				return !e.Exists, fmt.Sprintf("%q, TTL %v", e.Value, e.TTL)
			})
		})
	}
}

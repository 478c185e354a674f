package redlock_test

import (
	"testing"

	"github.com/redlockgo/redlock/internal/pooltest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlocktest"
)

// bubbleNodes are the kit's in-process nodes, each behind a pooltest
// wrapper, for tests in a testing/synctest bubble: time is virtual, so a
// bound is checked exactly and no load moves it. Call it inside the bubble.
type bubbleNodes struct {
	*redlocktest.Nodes
	faults []*pooltest.Faulty
	pools  []pool.Pool
}

func newBubbleNodes(t *testing.T, n int) *bubbleNodes {
	t.Helper()
	b := &bubbleNodes{Nodes: redlocktest.New(t, n)}
	for _, p := range b.Nodes.Pools() {
		f := pooltest.Wrap(p)
		b.faults = append(b.faults, f)
		b.pools = append(b.pools, faultyKit{f, p})
	}
	return b
}

// faultyKit is a kit node's wrapper that still tells the node's identity.
type faultyKit struct {
	*pooltest.Faulty
	inner pool.Pool
}

// Identity implements pool.Identifier.
func (f faultyKit) Identity() (pool.Identity, bool) { return identityOf(f.inner) }

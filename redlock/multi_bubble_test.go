package redlock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

// A multi-lock over five nodes, one down and one that never answers: each
// call (TryLockAll, Extend, Unlock) decides within the node timeout
// however long the silent node stays silent, and the three live nodes
// hold the keys, then nothing.
func TestMultiLockWithMinorityDownOrSilent(t *testing.T) {
	virtual(t)
	synctest.Test(t, func(t *testing.T) {
		nodes := newBubbleNodes(t, 5)
		const nodeTimeout = 250 * time.Millisecond
		c := newClient(t, nodes.pools, redlock.WithNodeTimeout(nodeTimeout))
		nodes.Stop(0)
		nodes.faults[1].Hang(true)
		keys := []string{"m", "n", "o"}
		timed := func(what string, call func() error) error {
			t.Helper()
			start := time.Now()
			err := call()
			assert.LessOrEqual(t, time.Since(start), nodeTimeout, "%s: a silent node bounds each call by the node timeout", what)
			return err
		}
		for round := range 3 {
			var l *redlock.Lock
			require.NoError(t, timed("TryLockAll", func() (err error) {
				l, err = c.TryLockAll(t.Context(), keys, 10*time.Second)
				return err
			}), "round %d: 3 of 5 nodes answer: the majority locks", round)
			for i := 2; i < 5; i++ {
				for _, k := range keys {
					_, held := nodes.get(t, i, k)
					assert.True(t, held, "round %d: %s on live node %d", round, k, i)
				}
			}
			require.NoError(t, timed("Extend", func() error { return l.Extend(t.Context(), 10*time.Second) }), "round %d", round)
			require.NoError(t, timed("Unlock", func() error { return l.Unlock(t.Context()) }), "round %d", round)
			c.WaitIdle()
			for _, k := range keys {
				assert.Zero(t, nodes.present(t, k), "round %d: %s released everywhere", round, k)
			}
		}
	})
}

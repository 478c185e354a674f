package redlock_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

// manyKeys returns n distinct keys under prefix.
func manyKeys(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s:%d", prefix, i)
	}
	return keys
}

// A multi-lock over more than MaxKeys keys is refused by every call, before
// any node is called; duplicates do not count.
func TestMultiLockRefusesMoreThanMaxKeys(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	over := manyKeys("k", redlock.MaxKeys+1)
	want := fmt.Sprintf("redlock: a multi-lock takes at most %d keys (MaxKeys), got %d; "+
		"split the set, or lock a key that stands for it", redlock.MaxKeys, redlock.MaxKeys+1)
	calls := map[string]func() error{
		"TryLockAll": func() error { _, err := c.TryLockAll(bg(), over, time.Second); return err },
		"LockAll":    func() error { _, err := c.LockAll(bg(), over, time.Second); return err },
		"DoAll": func() error {
			return c.DoAll(bg(), over, time.Second, func(context.Context) error {
				t.Error("fn ran")
				return nil
			})
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			require.EqualError(t, call(), want)
		})
	}
	for i, f := range fn.faults {
		assert.Zero(t, f.Calls(), "node %d was called", i)
	}
}

// At the limit, a multi-lock is obtained, extended and released on real
// nodes with the library's default node timeout (500ms for a 10s TTL),
// with and without fencing, and leaves no key behind. The keys are given
// with duplicates, which do not count toward the limit.
func TestRealMultiLockAtMaxKeys(t *testing.T) {
	alone(t)
	servers, pools := realNodes(t, 5)
	c, err := redlock.New(pools) // the default node timeout
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	for _, fenced := range []bool{false, true} {
		t.Run(fmt.Sprintf("fencing %v", fenced), func(t *testing.T) {
			keys := manyKeys(fmt.Sprintf("max%v", fenced), redlock.MaxKeys)
			given := append(slices.Clone(keys), keys[:10]...)
			var opts []redlock.LockOption
			if fenced {
				opts = append(opts, redlock.WithFencing())
			}
			for round := range 3 {
				// A deadline, so that a machine too loaded for any attempt
				// to meet the node timeout fails the test instead of
				// hanging it (a run beside three simulations did).
				ctx, cancel := context.WithTimeout(bg(), time.Minute)
				l, err := c.LockAll(ctx, given, 10*time.Second, opts...)
				cancel()
				require.NoError(t, err, "round %d", round)
				require.Len(t, l.Keys(), redlock.MaxKeys)
				if fenced {
					assert.Positive(t, l.Fence())
				}
				// On a loaded machine (two CPU hogs, two race builds of
				// this package) four nodes have answered the release of
				// MaxKeys keys after the default 500ms: that is logged,
				// and its node calls still run (to CallBound), which
				// WaitIdle waits for; the keys must be gone after it.
				extendedOrLate(t, l.Extend(bg(), 10*time.Second), fmt.Sprintf("round %d: Extend", round))
				releasedOrLate(t, l.Unlock(bg()), fmt.Sprintf("round %d: Unlock", round))
				c.WaitIdle()
				requireAbsent(t, servers, keys...)
			}
		})
	}
}

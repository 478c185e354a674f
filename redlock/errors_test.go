package redlock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

// nodeCauses maps each node listed in err's QuorumError to its cause.
func nodeCauses(t *testing.T, err error) map[int]error {
	t.Helper()
	var qe *redlock.QuorumError
	require.ErrorAs(t, err, &qe)
	out := make(map[int]error, len(qe.Nodes))
	for _, n := range qe.Nodes {
		out[n.Node] = n.Err
	}
	return out
}

func TestNodeTimeoutIsNotTheCallersDeadline(t *testing.T) {
	fn := newFakeNodes(t, 3)
	fn.faults[0].Hang(true)
	fn.faults[1].Hang(true)
	c := newClient(t, fn.pools, redlock.WithNodeTimeout(50*time.Millisecond))

	_, err := c.TryLock(context.Background(), "k", time.Minute)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrNodeTimeout)
	require.NotErrorIs(t, err, context.DeadlineExceeded, "the caller's context did not end")
	require.NotErrorIs(t, err, context.Canceled)
	causes := nodeCauses(t, err)
	require.ErrorIs(t, causes[0], redlock.ErrNodeTimeout)
	require.ErrorIs(t, causes[1], redlock.ErrNodeTimeout)
	require.NotErrorIs(t, causes[0], context.DeadlineExceeded)
	assert.NotContains(t, causes, 2, "node 2 agreed")
}

func TestCallersContextStillShows(t *testing.T) {
	defer parallel(t).idle() // its cleanups wait out the calls to silent nodes
	fn := newFakeNodes(t, 3)
	fn.faults[0].Hang(true)
	fn.faults[1].Hang(true)
	c := newClient(t, fn.pools) // node timeout 1s: the caller's context ends first

	ctx, cancel := context.WithTimeout(bg(), 30*time.Millisecond)
	defer cancel()
	_, err := c.TryLock(ctx, "k", time.Minute)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)

}

func TestLockErrorNamesEveryNodeOnce(t *testing.T) {
	fn := newFakeNodes(t, 5)
	a := newClient(t, fn.pools)
	b := newClient(t, fn.pools)
	held, err := a.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	a.WaitIdle()
	// Nodes 3 and 4 answer only after b's attempt has been decided by the
	// refusals of nodes 0-2.
	open3, open4 := fn.faults[3].Hold(), fn.faults[4].Hold()
	_, err = b.TryLock(bg(), "k", time.Minute)
	open3()
	open4()
	b.WaitIdle()

	want := "redlock: lock not obtained: 0 of 5 nodes agreed, 3 needed ("
	for i := range 5 {
		if i > 0 {
			want += "; "
		}
		cause := "held by another owner"
		if i >= 3 {
			cause = "no answer before the decision"
		}
		want += fmt.Sprintf("node %d (%s): %s", i, fn.pools[i].Addr(), cause)
	}
	want += ")"
	require.EqualError(t, err, want)
	assert.Equal(t, 1, strings.Count(err.Error(), "redlock:"), "the prefix is not repeated")
	causes := nodeCauses(t, err)
	require.ErrorIs(t, causes[0], redlock.ErrTaken)
	require.ErrorIs(t, causes[4], redlock.ErrPending)
	require.NoError(t, held.Unlock(bg()))
}

func TestNilLockIsNotHeld(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	held, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	defer held.Unlock(bg())
	l, err := c.TryLock(bg(), "k", time.Minute) // refused: l is nil
	require.Error(t, err)
	require.ErrorIs(t, l.Unlock(bg()), redlock.ErrNotHeld)
	require.ErrorIs(t, l.Extend(bg(), time.Minute), redlock.ErrNotHeld)
	var zero redlock.Lock
	require.ErrorIs(t, zero.Unlock(bg()), redlock.ErrNotHeld)
}

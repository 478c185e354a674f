package redlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

func TestRealStatus(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	holder := newClient(t, pools)
	// newClient's 1s node timeout: Status asks every node, and the test
	// counts who answered; at 200ms a loaded machine (two CPU hogs, two
	// race builds of this package) can leave a live node out of them.
	c := newClient(t, pools)
	const ttl = time.Minute

	st, err := c.Status(bg(), "res")
	require.NoError(t, err)
	assert.False(t, st.Held)
	assert.Empty(t, st.Token)
	assert.Equal(t, 0, st.Holders)
	assert.Equal(t, 5, st.Answered)
	assert.Equal(t, 3, st.Needed)
	assert.Zero(t, st.TTL)

	l, err := holder.TryLock(bg(), "res", ttl)
	require.NoError(t, err)
	holder.WaitIdle()
	st, err = c.Status(bg(), "res")
	require.NoError(t, err)
	assert.True(t, st.Held)
	assert.Equal(t, l.Token(), st.Token)
	assert.Equal(t, 5, st.Holders)
	assert.Greater(t, st.TTL, ttl-10*time.Second)
	assert.LessOrEqual(t, st.TTL, ttl)
	for i, n := range st.Nodes {
		assert.Equal(t, i, n.Node)
		assert.Equal(t, servers[i].Addr(), n.Addr)
		assert.Equal(t, l.Token(), n.Token)
		require.NoError(t, n.Err)
	}

	// A minority down, one of them silent: still told, within the node
	// timeout (the silent node would otherwise hold the call forever).
	servers[0].Kill()
	servers[1].Pause()
	defer servers[1].Resume()
	st, err = c.Status(bg(), "res")
	require.NoError(t, err)
	assert.True(t, st.Held)
	assert.Equal(t, 3, st.Holders)
	assert.Equal(t, 3, st.Answered)
	require.Error(t, st.Nodes[0].Err)
	require.ErrorIs(t, st.Nodes[1].Err, redlock.ErrNodeTimeout)
	require.NoError(t, st.Nodes[2].Err)

	// A majority down: no answer, but what the others said.
	servers[2].Kill()
	st, err = c.Status(bg(), "res")
	require.ErrorIs(t, err, redlock.ErrNoMajority)
	require.NotErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "redlock: no majority answered: 2 of 5 nodes answered, 3 needed (node 0 ")
	var qe *redlock.QuorumError
	require.ErrorAs(t, err, &qe)
	assert.Len(t, qe.Nodes, 3)
	assert.False(t, st.Held)
	assert.Equal(t, 2, st.Holders)
	assert.Equal(t, 2, st.Answered)
}

func TestRealStatusReportsAKeyReservedForAWaitingLockAllFreeAndItsRefusalContended(t *testing.T) {
	servers, pools := realNodes(t, 3)
	holder := newClient(t, pools)
	lb, err := holder.TryLock(bg(), "sb", 10*time.Second)
	require.NoError(t, err)
	holder.WaitIdle()
	requireHeldEverywhere(t, servers, lb.Token(), "sb")

	// A LockAll heads the queue of "sa", free, and reserves it while "sb"
	// is held.
	m := newClient(t, pools)
	mctx, mcancel := context.WithCancel(bg())
	multi := make(chan error, 1)
	go func() {
		l, err := m.LockAll(mctx, []string{"sa", "sb"}, 10*time.Second, redlock.WithRetry(redlock.ConstantBackoff(time.Hour)))
		if err == nil {
			_ = l.Unlock(bg())
		}
		multi <- err
	}()
	defer func() { mcancel(); <-multi }()
	awaitState(t, 2*nodeCallBound, "sa reserved for the multi-lock on every node", func() bool {
		for _, s := range servers {
			if !strings.HasPrefix(s.Client(t).Get(bg(), "sa").Val(), "q:") {
				return false
			}
		}
		return true
	}, onServers(servers, "sa", queueKey("sa")))

	// Nobody holds it: free, reserved on every node.
	c := newClient(t, pools)
	st, err := c.Status(bg(), "sa")
	require.NoError(t, err)
	assert.False(t, st.Held, "a reservation reported as a hold")
	assert.Empty(t, st.Kind)
	assert.Empty(t, st.Token)
	assert.Zero(t, st.Holders)
	assert.Equal(t, 3, st.Reserved)
	for _, n := range st.Nodes {
		require.NoError(t, n.Err)
		assert.True(t, n.Reserved, "node %d", n.Node)
		assert.Empty(t, n.Kind, "node %d", n.Node)
		assert.Zero(t, n.Leases, "node %d", n.Node)
		assert.Positive(t, n.TTL, "node %d: the reservation's TTL", n.Node)
	}

	// A later caller is refused: another came first, so it is contended
	// (waiting may succeed), not unavailable, and not another kind.
	_, err = c.TryLock(bg(), "sa", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	assert.True(t, redlock.IsContended(err), "%v", err)
	assert.NotErrorIs(t, err, redlock.ErrWrongKind)
	require.NoError(t, lb.Unlock(bg()))
}

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

func TestCampaignRejectsBadInput(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	var nilCtx context.Context
	for _, tc := range []struct {
		name, election, value string
		ctx                   context.Context
		ttl                   time.Duration
		want                  string
	}{
		{"nil context", "e", "v", nilCtx, 10 * time.Second, "nil context"},
		{"empty election", "", "v", bg(), 10 * time.Second, "empty election name"},
		{"reserved election name", "redlock:e", "v", bg(), 10 * time.Second, `election name "redlock:e" begins with "redlock:"`},
		{"empty value", "e", "", bg(), 10 * time.Second, "empty leader value"},
		{"oversized value", "e", strings.Repeat("x", redlock.MaxLeaderValue+1), bg(), 10 * time.Second, "exceeds MaxLeaderValue"},
		{"zero ttl", "e", "v", bg(), 0, "ttl"},
		{"ttl above MaxTTL", "e", "v", bg(), redlock.MaxTTL + time.Millisecond, "ttl"},
		{"ttl above the max TTL", "e", "v", bg(), redlock.DefaultMaxTTL + time.Millisecond, "WithMaxTTL(1m0.001s)"},
		{"ttl too short to keep alive", "e", "v", bg(), 100 * time.Millisecond, "too short to auto-extend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls, err := c.Campaign(tc.ctx, tc.election, tc.value, tc.ttl)
			require.ErrorContains(t, err, tc.want)
			assert.Nil(t, ls)
		})
	}
	assert.Zero(t, fn.present(electionKey(t, "e")), "a refused campaign touches no node")

	ls, err := c.Campaign(bg(), "e", strings.Repeat("x", redlock.MaxLeaderValue), 10*time.Second)
	require.NoError(t, err, "a value of MaxLeaderValue bytes is accepted")
	require.ErrorContains(t, ls.Proclaim(bg(), ""), "empty leader value")
	require.ErrorContains(t, ls.Proclaim(bg(), strings.Repeat("x", redlock.MaxLeaderValue+1)), "exceeds MaxLeaderValue")
	require.ErrorContains(t, ls.Proclaim(nilCtx, "v"), "nil context")
	require.NoError(t, ls.Resign(nilCtx), "Resign takes a nil context as Unlock does")

	_, err = c.Leader(bg(), "")
	require.ErrorContains(t, err, "empty election name")
	_, err = c.Leader(nilCtx, "e")
	require.ErrorContains(t, err, "nil context")
	for _, ch := range []<-chan redlock.Leader{c.ObserveLeader(bg(), ""), c.ObserveLeader(nilCtx, "e")} {
		_, ok := <-ch
		assert.False(t, ok, "Observe with bad input returns a closed channel")
	}
}

func TestElectionNilReceivers(t *testing.T) {
	var c *redlock.Client
	_, err := c.Campaign(bg(), "e", "v", time.Second)
	require.ErrorContains(t, err, "nil client")
	_, err = c.Leader(bg(), "e")
	require.ErrorContains(t, err, "nil client")
	_, ok := <-c.ObserveLeader(bg(), "e")
	assert.False(t, ok)

	var ls *redlock.Leadership
	assert.Zero(t, ls.Term())
	assert.Empty(t, ls.Value())
	assert.Zero(t, ls.Until())
	assert.Nil(t, ls.Done())
	require.ErrorIs(t, ls.Err(), redlock.ErrNotHeld)
	require.ErrorIs(t, ls.Proclaim(bg(), "v"), redlock.ErrNotHeld)
	require.ErrorIs(t, ls.Resign(bg()), redlock.ErrNotHeld)
}

func TestElectionAfterClose(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c, err := redlock.New(fn.pools)
	require.NoError(t, err)
	ls, err := c.Campaign(bg(), "e", "v", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, c.Close())

	<-ls.Done()
	require.ErrorIs(t, ls.Err(), redlock.ErrClosed)
	require.ErrorIs(t, ls.Err(), redlock.ErrLockLost)
	require.ErrorIs(t, ls.Proclaim(bg(), "w"), redlock.ErrNotHeld)
	require.ErrorIs(t, ls.Resign(bg()), redlock.ErrClosed)
	_, err = c.Campaign(bg(), "e", "v", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrClosed)
	_, err = c.Leader(bg(), "e")
	require.ErrorIs(t, err, redlock.ErrClosed)
}

// The whole life of a leadership on in-memory nodes: the record is on
// every node while it leads, gone after Resign.
func TestElectionRecordFollowsTheLeadership(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	ls, err := c.Campaign(bg(), "{orders}", "host-a", 10*time.Second)
	require.NoError(t, err)
	// A majority has it when Campaign returns; the last node's call is
	// still on its way (nodeCallBound; WaitIdle would wait for the keeper
	// too).
	awaitState(t, nodeCallBound, "host-a leader on every node", func() bool {
		for _, s := range fn.servers {
			if s.HGet(leaderKey(t, "{orders}"), "value") != "host-a" {
				return false
			}
		}
		return true
	}, onFakes(fn))
	ld, err := c.Leader(bg(), "{orders}")
	require.NoError(t, err)
	assert.Equal(t, "host-a", ld.Value)
	assert.Equal(t, ls.Term(), ld.Term)

	require.NoError(t, ls.Resign(bg()))
	c.WaitIdle()
	assert.Zero(t, fn.present(leaderKey(t, "{orders}")), "Resign deletes its record")
	assert.Zero(t, fn.present(electionKey(t, "{orders}")))
	_, err = c.Leader(bg(), "{orders}")
	require.ErrorIs(t, err, redlock.ErrNoLeader)
}

package redlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

func TestStatusFindsTheMostCommonToken(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	c.WaitIdle()
	// Another owner's copy on one node, and no expiry on it.
	require.NoError(t, fn.servers[2].Set("k", "other"))
	st, err := c.Status(bg(), "k")
	require.NoError(t, err)
	assert.True(t, st.Held)
	assert.Equal(t, 2, st.Holders)
	assert.Equal(t, "other", st.Nodes[2].Token)
	assert.Equal(t, time.Duration(-1), st.Nodes[2].TTL)

	require.NoError(t, l.Unlock(bg()))
	c.WaitIdle()
	st, err = c.Status(bg(), "k")
	require.NoError(t, err)
	assert.False(t, st.Held)
	assert.Equal(t, "other", st.Token, "the most common token, on one node")
	assert.Equal(t, 1, st.Holders)

	_, err = c.Status(bg(), "")
	require.ErrorContains(t, err, "empty key")
	var nilClient *redlock.Client
	_, err = nilClient.Status(bg(), "k")
	require.ErrorContains(t, err, "nil client")
}

package redlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// mixedNodes returns three fake nodes: node 0 tells an identity the test
// sets, an old run at first; nodes 1 and 2 tell theirs as fake nodes do.
func mixedNodes(t *testing.T) []pool.Pool {
	known := knownNodes(t, 1, time.Now())
	fn := newFakeNodes(t, 2)
	return []pool.Pool{known[0], fn.pools[0], fn.pools[1]}
}

// TestStatusShowsUnverifiedNodes checks NodeStatus.Unverified: set on the
// nodes the quarantine cannot age (no uptime in their identity: INFO
// hidden), never with the quarantine off.
func TestStatusShowsUnverifiedNodes(t *testing.T) {
	pools := mixedNodes(t)
	c := newClient(t, pools)
	st, err := c.Status(bg(), "k")
	require.NoError(t, err)
	unverified := func(st redlock.KeyStatus) []bool {
		out := make([]bool, len(st.Nodes))
		for i, n := range st.Nodes {
			out[i] = n.Unverified
		}
		return out
	}
	assert.Equal(t, []bool{false, false, false}, unverified(st))

	pools[0].(*knownPool).set(pool.Identity{RunID: "hidden", Persistence: pool.PersistencePartial}) // INFO hidden
	st, err = c.Status(bg(), "k")
	require.NoError(t, err)
	assert.Equal(t, []bool{true, false, false}, unverified(st))

	st, err = newClient(t, pools, redlock.WithQuarantine(0)).Status(bg(), "k")
	require.NoError(t, err)
	assert.Equal(t, []bool{false, false, false}, unverified(st))
}

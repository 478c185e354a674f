package rueidispool_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// The adapter is a pool.Commander: CheckNodes and DeclareFresh read and
// declare its nodes as they do go-redis's.
func TestCommanderCheckNodesAndDeclareFresh(t *testing.T) {
	t.Parallel()
	servers := redistest.StartNUndeclared(t, 3, redistest.NoPersistence)
	pools := openAll(t, servers)
	ctx := context.Background()

	cmd, ok := pools[0].(pool.Commander)
	require.True(t, ok)
	v, err := cmd.Do(ctx, "CONFIG", "GET", "maxmemory-policy")
	require.NoError(t, err)
	assert.Contains(t, []any{[]any{"maxmemory-policy", "noeviction"}, map[string]any{"maxmemory-policy": "noeviction"}}, v)
	v, err = cmd.Do(ctx, "GET", "no-such-key")
	require.NoError(t, err)
	assert.Nil(t, v)

	r, err := redlock.CheckNodes(ctx, pools)
	require.NoError(t, err)
	assert.Equal(t, 0, r.Counting)
	for _, n := range r.Nodes {
		require.NoError(t, n.Err)
		assert.Equal(t, pool.PersistencePartial, n.Persistence)
		assert.Equal(t, "noeviction", n.MaxmemoryPolicy)
		assert.Positive(t, n.Quarantined)
	}
	_, err = redlock.DeclareFresh(ctx, pools)
	require.NoError(t, err)
	r, err = redlock.CheckNodes(ctx, pools, redlock.WithNodeTimeout(time.Second))
	require.NoError(t, err)
	assert.True(t, r.OK())
	assert.Equal(t, 3, r.Counting)
}

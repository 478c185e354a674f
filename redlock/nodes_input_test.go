package redlock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// CheckNodes and DeclareFresh answer bad input with an error, never a
// panic, and call no node for it.
func TestNodesToolsBadInput(t *testing.T) {
	//lint:ignore SA1012 a nil context is the bad input under test
	_, err := redlock.CheckNodes(nil, []pool.Pool{nil})
	require.ErrorContains(t, err, "nil context")
	_, err = redlock.CheckNodes(context.Background(), nil)
	require.ErrorContains(t, err, "no pools")
	r, err := redlock.CheckNodes(context.Background(), []pool.Pool{nil})
	require.NoError(t, err)
	require.ErrorContains(t, r.Nodes[0].Err, "nil pool")
	assert.False(t, r.OK())

	_, err = redlock.DeclareFresh(context.Background(), nil)
	require.ErrorContains(t, err, "no pools")
	decl, err := redlock.DeclareFresh(context.Background(), []pool.Pool{nil})
	require.ErrorContains(t, err, "nil pool")
	assert.Empty(t, decl)
}

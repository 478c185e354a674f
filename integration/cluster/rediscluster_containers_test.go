package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/redlockgo/redlock/internal/redistest"
)

// runningTarget is a container that is always running: shardReady asks it
// only for its state.
type runningTarget struct{ wait.StrategyTarget }

func (runningTarget) State(context.Context) (*container.State, error) {
	return &container.State{Running: true}, nil
}

// TestShardReadyOnlyWhenItsOwnServerAnswers: a Redis at a shard's address
// whose cluster bus port is not the shard's (another process's, the shard's
// own Redis having failed to bind the port) does not answer as the shard,
// though it answers PING (WaitUntilReady waits on); the shard's own server
// does, and is ready.
func TestShardReadyOnlyWhenItsOwnServerAnswers(t *testing.T) {
	other := redistest.StartClusterNode(t, redistest.NoPersistence)

	// The bound is for a loaded machine: each answer comes at once.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.ErrorContains(t, shardReady{other.Addr(), other.BusPort + 1}.answers(ctx), "not this shard's",
		"a server with another bus port must not pass for the shard")
	require.NoError(t, shardReady{other.Addr(), other.BusPort}.WaitUntilReady(ctx, runningTarget{}),
		"the shard's own server (its bus port) is ready")
}

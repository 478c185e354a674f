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

// runningTarget is a container that is always running: addrPing asks it
// only for its state.
type runningTarget struct{ wait.StrategyTarget }

func (runningTarget) State(context.Context) (*container.State, error) {
	return &container.State{Running: true}, nil
}

// TestShardReadyOnlyWhenItsOwnServerAnswers: a shard whose port another
// process's Redis answers on is never ready (its own Redis could not bind
// the port), however long the other answers PING; the shard's own server,
// told by its cluster bus port, is.
func TestShardReadyOnlyWhenItsOwnServerAnswers(t *testing.T) {
	other := redistest.StartClusterNode(t, redistest.NoPersistence)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := addrPing{other.Addr(), other.BusPort + 1}.WaitUntilReady(ctx, runningTarget{})
	require.ErrorContains(t, err, "not this shard's", "a server with another bus port must not pass for the shard")

	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, addrPing{other.Addr(), other.BusPort}.WaitUntilReady(ctx, runningTarget{}),
		"the shard's own server (its bus port) is ready")
}

package pool_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
)

// Do runs any command, with replies as Commander documents them, on the
// pools of FromURL and of New, over RESP2 and RESP3.
func TestCommander(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.NoPersistence)
	fromURL, err := pool.FromURL(s.URL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = fromURL.Close() })
	resp2 := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
	t.Cleanup(func() { _ = resp2.Close() })
	resp3 := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 3})
	t.Cleanup(func() { _ = resp3.Close() })
	ctx := context.Background()
	for name, p := range map[string]pool.Pool{"FromURL": fromURL, "New RESP2": pool.New(resp2), "New RESP3": pool.New(resp3)} {
		t.Run(name, func(t *testing.T) {
			cmd, ok := p.(pool.Commander)
			require.True(t, ok)
			v, err := cmd.Do(ctx, "CONFIG", "GET", "maxmemory-policy")
			require.NoError(t, err)
			assert.Contains(t, []any{[]any{"maxmemory-policy", "noeviction"}, map[string]any{"maxmemory-policy": "noeviction"}}, v)
			v, err = cmd.Do(ctx, "GET", "commander-no-such-key")
			require.NoError(t, err)
			assert.Nil(t, v)
			v, err = cmd.Do(ctx, "INFO", "server")
			require.NoError(t, err)
			assert.Contains(t, v, "run_id:")
			_, err = cmd.Do(ctx, "NO-SUCH-COMMAND")
			require.Error(t, err)
			_, err = cmd.Do(ctx)
			require.Error(t, err)
		})
	}
}

package redistest_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
)

// Under Reuse, a later test gets a server an earlier one left untouched,
// emptied (keys of every database, scripts, other connections) and declared
// fresh again; a server that was killed, paused, or whose configuration
// changed is not handed on; and Reuse kills the servers it kept.
func TestReuse(t *testing.T) {
	ctx := context.Background()
	var kept string // the address an untouched server was handed back on
	code := redistest.Reuse(func() int {
		t.Run("dirtied", func(t *testing.T) {
			s := redistest.StartN(t, 1, redistest.NoPersistence)[0]
			kept = s.Addr()
			c := s.Client(t)
			require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
			require.NoError(t, c.Do(ctx, "SELECT", "3").Err())
			require.NoError(t, c.ScriptLoad(ctx, "return 1").Err())
			sub := c.Subscribe(ctx, "ch")
			_, err := sub.Receive(ctx)
			require.NoError(t, err)
			t.Cleanup(func() { _ = sub.Close() })
		})
		t.Run("handed on empty", func(t *testing.T) {
			s := redistest.Start(t, redistest.NoPersistence)
			require.Equal(t, kept, s.Addr(), "the untouched server is reused")
			c := s.Client(t)
			keys, err := c.Keys(ctx, "*").Result()
			require.NoError(t, err)
			assert.Equal(t, []string{redistest.FreshStartKey}, keys, "only the fresh-start declaration")
			run, err := c.Get(ctx, redistest.FreshStartKey).Result()
			require.NoError(t, err)
			info, err := c.Info(ctx, "server").Result()
			require.NoError(t, err)
			assert.Contains(t, info, "run_id:"+run, "declared fresh for its run")
			for db := range 16 {
				n, err := c.Do(ctx, "SELECT", db).Result()
				require.NoError(t, err, n)
				size, err := c.DBSize(ctx).Result()
				require.NoError(t, err)
				if db != 0 {
					assert.Zero(t, size, "database %d", db)
				}
			}
			exists, err := c.ScriptExists(ctx, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db").Result()
			require.NoError(t, err)
			assert.Equal(t, []bool{false}, exists, "scripts flushed")
			subs, err := c.PubSubNumSub(ctx, "ch").Result()
			require.NoError(t, err)
			assert.Zero(t, subs["ch"], "the earlier test's subscriber was dropped")
			require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
		})
		t.Run("a changed configuration is not handed on", func(t *testing.T) {
			s := redistest.Start(t, redistest.NoPersistence)
			assert.NotEqual(t, kept, s.Addr())
			kept = s.Addr()
			s.Pause()
			s.Resume()
		})
		t.Run("a signalled server is not handed on", func(t *testing.T) {
			s := redistest.Start(t, redistest.NoPersistence)
			assert.NotEqual(t, kept, s.Addr())
			kept = s.Addr()
		})
		return 0
	})
	require.Zero(t, code)
	conn, err := net.DialTimeout("tcp", kept, time.Second)
	if err == nil {
		_ = conn.Close()
	}
	require.Error(t, err, "Reuse killed the server it kept")
}

package pool_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/pool"
)

// TestNewNilClient checks that New of a nil client, untyped or a nil
// pointer of any go-redis client type, makes a Pool whose every call to the
// node fails with an error that says so, and that nothing panics.
func TestNewNilClient(t *testing.T) {
	tests := []struct {
		name   string
		client redis.UniversalClient
		addr   string
	}{
		{"Untyped", nil, "<nil client>"},
		{"Client", (*redis.Client)(nil), "<nil *redis.Client>"},
		{"ClusterClient", (*redis.ClusterClient)(nil), "<nil *redis.ClusterClient>"},
		{"Ring", (*redis.Ring)(nil), "<nil *redis.Ring>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p pool.Pool
			require.NotPanics(t, func() { p = pool.New(tc.client) })
			require.NotNil(t, p)
			ctx := context.Background()

			assert.Equal(t, tc.addr, p.Addr())
			c, ok := p.(pool.Cluster)
			require.True(t, ok)
			assert.False(t, c.IsCluster(), "a nil client is no cluster")
			_, ok = p.(pool.Identifier)
			assert.False(t, ok, "New's Pool does not see connections open")

			set, err := p.SetNX(ctx, "k", "v", time.Minute)
			require.ErrorContains(t, err, "pool: nil redis client")
			assert.False(t, set)

			v, err := p.Eval(ctx, pool.NewScript("return 1"), []string{"k"})
			require.ErrorContains(t, err, "pool: nil redis client")
			assert.Nil(t, v)

			n, ok := p.(pool.Notifier)
			require.True(t, ok)
			l, err := n.Listen(ctx)
			require.ErrorContains(t, err, "pool: nil redis client")
			assert.Nil(t, l)

			require.NoError(t, p.Close(), "nothing to release")
		})
	}
}

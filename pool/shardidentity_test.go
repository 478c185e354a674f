package pool_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
)

// runIDOf is a script that returns the run_id of the master serving its
// key's slot.
var runIDOf = pool.NewScript(`return string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')`)

// shardRun runs runIDOf for key on p and returns the run_id of the master
// that served it.
func shardRun(t *testing.T, p pool.Pool, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := p.Eval(ctx, runIDOf, []string{key})
	require.NoError(t, err)
	id, _ := v.(string)
	require.NotEmpty(t, id)
	return id
}

// clusterURL is the cluster URL of c's masters.
func clusterURL(c *redistest.ReplicatedCluster) string {
	addrs := c.Addrs()
	return "redis+cluster://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
}

// TestShardIdentityLearnedAtConnect checks that a cluster pool made from a
// URL knows, for the run that answered a command, what CONFIG GET said on
// its connection to that run, and nothing of a run it never reached.
func TestShardIdentityLearnedAtConnect(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     redistest.Persistence
		extra []string
		want  pool.Persistence
	}{
		{"AOF always", redistest.AOFAlways, nil, pool.PersistenceAlways},
		{"AOF every second", redistest.AOFEverySec, nil, pool.PersistencePartial},
		{"CONFIG renamed away", redistest.AOFAlways, []string{"--rename-command", "CONFIG", ""}, pool.PersistenceUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := redistest.StartCLIClusters(t, 1, 3, 0, tc.p, tc.extra...)[0]
			p, err := pool.FromURL(clusterURL(c))
			require.NoError(t, err)
			t.Cleanup(func() { _ = p.Close() })
			si, ok := p.(pool.ShardIdentifier)
			require.True(t, ok, "a cluster pool from a URL is a ShardIdentifier")
			for _, key := range []string{"orders:42", "{orders}:1", "res:7"} {
				run := shardRun(t, p, key)
				id, ok := si.ShardIdentity(run)
				require.True(t, ok, "%s: the pool connected to run %s", key, run)
				assert.Equal(t, run, id.RunID)
				assert.Equal(t, tc.want, id.Persistence, key)
				assert.False(t, id.Started.IsZero(), "uptime known")
				if tc.want == pool.PersistenceUnknown {
					assert.ErrorContains(t, id.Err, "CONFIG GET", "why persistence is unknown")
				}
			}
			_, ok = si.ShardIdentity("0000000000000000000000000000000000000000")
			assert.False(t, ok, "a run the pool never reached")
			_, ok = si.ShardIdentity("")
			assert.False(t, ok, "no run_id")
		})
	}
}

// TestShardIdentityOfAdaptedClusterClient checks that a Pool made by New
// over a cluster client of the caller's learns nothing: it does not see
// the connections open.
func TestShardIdentityOfAdaptedClusterClient(t *testing.T) {
	c := redistest.StartCLIClusters(t, 1, 3, 0, redistest.AOFAlways)[0]
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), MaxRetries: -1})
	t.Cleanup(func() { _ = cc.Close() })
	p := pool.New(cc)
	run := shardRun(t, p, "orders:42")
	_, ok := p.(pool.ShardIdentifier).ShardIdentity(run)
	assert.False(t, ok)
}

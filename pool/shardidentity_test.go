package pool_test

import (
	"context"
	"strconv"
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

// TestShardIdentityOfTheKeysMaster checks that a cluster pool tells, for
// the run that served a key, what CONFIG GET says on that master, reads it
// once per run, and tells nothing of another run.
func TestShardIdentityOfTheKeysMaster(t *testing.T) {
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
			require.True(t, ok, "a cluster pool is a ShardIdentifier")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for _, key := range []string{"orders:42", "{orders}:1", "res:7"} {
				run := shardRun(t, p, key)
				id, err := si.ShardIdentity(ctx, key, run)
				require.NoError(t, err, key)
				assert.Equal(t, run, id.RunID)
				assert.Equal(t, tc.want, id.Persistence, key)
				assert.False(t, id.Started.IsZero(), "uptime known")
				if tc.want == pool.PersistenceUnknown {
					assert.ErrorContains(t, id.Err, "CONFIG GET", "why persistence is unknown")
				}
				infos := c.MasterOf(key).Client(t)
				before := infos.Info(ctx, "commandstats").Val()
				_, err = si.ShardIdentity(ctx, key, run)
				require.NoError(t, err)
				assert.Equal(t, calls(before, "info"), calls(infos.Info(ctx, "commandstats").Val(), "info")-1,
					"a run read once: only our INFO commandstats since")
			}
			_, err = si.ShardIdentity(ctx, "orders:42", "0000000000000000000000000000000000000000")
			assert.ErrorContains(t, err, "not 0000", "another run's identity is never told")
		})
	}
}

// calls returns the calls of cmd in INFO commandstats text.
func calls(info, cmd string) int64 {
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls="); ok {
			n, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
			return n
		}
	}
	return 0
}

// TestShardIdentityOfAdaptedClients checks New: over a cluster client of
// the caller's the Pool tells too; over a plain client it is no cluster.
func TestShardIdentityOfAdaptedClients(t *testing.T) {
	c := redistest.StartCLIClusters(t, 1, 3, 0, redistest.AOFAlways)[0]
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), MaxRetries: -1})
	t.Cleanup(func() { _ = cc.Close() })
	p := pool.New(cc)
	run := shardRun(t, p, "orders:42")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := p.(pool.ShardIdentifier).ShardIdentity(ctx, "orders:42", run)
	require.NoError(t, err)
	assert.Equal(t, pool.PersistenceAlways, id.Persistence)

	plain := pool.New(c.Masters[0].Client(t))
	_, err = plain.(pool.ShardIdentifier).ShardIdentity(ctx, "orders:42", run)
	assert.ErrorContains(t, err, "not a Redis Cluster")
}

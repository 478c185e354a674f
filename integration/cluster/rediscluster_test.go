package cluster_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

// TestRedisClustersMutualExclusionWhileShardsDie has four Clients contend on
// keys over every shard of three clusters of three masters, while the
// masters of two different shards die on two of the clusters and come back
// empty. No key is ever held twice at once, and keys of every shard keep
// being locked.
func TestRedisClustersMutualExclusionWhileShardsDie(t *testing.T) {
	rc := cluster.StartRedisClusters(t, 3, 3)
	keys := make([]string, 12)
	perShard := make([]int, rc.Shards())
	for i := range keys {
		keys[i] = fmt.Sprintf("contended:%d", i)
		perShard[rc.ShardOf(keys[i])]++
	}
	for s, n := range perShard {
		require.Positive(t, n, "shard %d has keys", s)
	}

	var (
		holding sync.Map // key -> token of the holder, while held
		overlap atomic.Int64
		locked  [3]atomic.Int64 // by shard
		wg      sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(context.Background())
	for w := range 4 {
		c, err := redlock.New(rc.Pools())
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, c.Close()) })
		wg.Go(func() {
			for i := w; ctx.Err() == nil; i++ {
				key := keys[i%len(keys)]
				l, err := c.TryLock(ctx, key, 10*time.Second, redlock.WithFencing())
				if err != nil {
					continue
				}
				if _, dup := holding.LoadOrStore(key, l.Token()); dup {
					overlap.Add(1)
				}
				locked[rc.ShardOf(key)].Add(1)
				time.Sleep(time.Millisecond) // the work under the lock
				holding.Delete(key)
				_ = l.Unlock(context.Background())
			}
		})
	}
	counts := func() (c [3]int64) {
		for s := range c {
			c[s] = locked[s].Load()
		}
		return c
	}
	// progress waits until keys of every shard were locked 5 more times.
	// A TryLock ends within two node timeouts (the attempt and its cleanup:
	// 1s at the default 500ms of a 10s TTL), so one worker alone, its every
	// attempt that slow, locks 6 keys of each of the 3 shards within 18s;
	// the bound doubles that for a loaded machine.
	progress := func(what string) {
		t.Helper()
		from := counts()
		redistest.WaitFor(t, 2*6*3*time.Second, "keys of every shard to be locked 5 more times "+what, func() (bool, string) {
			now := counts()
			return now[0] > from[0]+5 && now[1] > from[1]+5 && now[2] > from[2]+5, fmt.Sprintf("locks by shard %v, from %v", now, from)
		})
	}
	progress("before the faults")
	require.NoError(t, rc.KillShard(context.Background(), 0, 0))
	require.NoError(t, rc.KillShard(context.Background(), 1, 1))
	progress("while shard 0 of node 0 and shard 1 of node 1 are dead")
	rctx, rcancel := context.WithTimeout(context.Background(), 20*time.Second)
	require.NoError(t, rc.RestartShard(rctx, 0, 0))
	require.NoError(t, rc.RestartShard(rctx, 1, 1))
	rcancel()
	progress("after the restarts")
	cancel()
	wg.Wait()

	assert.Zero(t, overlap.Load(), "a key was held twice at once")
}

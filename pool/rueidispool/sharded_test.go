package rueidispool_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/pool/rueidispool"
	"github.com/redlockgo/redlock/redlock"
)

// clusterPools starts n clusters of m masters and returns them with one
// Pool each, over a rueidis client in cluster mode.
func clusterPools(t *testing.T, n, m int) ([]*redistest.Cluster, []pool.Pool) {
	t.Helper()
	clusters := redistest.StartClusters(t, n, m, redistest.NoPersistence)
	pools := make([]pool.Pool, n)
	for i, c := range clusters {
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: c.Addrs(), DisableCache: true})
		require.NoError(t, err)
		t.Cleanup(rc.Close)
		pools[i] = rueidispool.New(rc)
	}
	return clusters, pools
}

// TestClusterShardedListenerFollowsSlotMove runs on a real Redis 7 cluster
// of three masters: a sharded channel is subscribed with SSUBSCRIBE on the
// master that owns its slot, and on no other, and hears SPUBLISH there;
// when the slot moves to another master, the old one drops the
// subscription and the listener subscribes on the new owner.
func TestClusterShardedListenerFollowsSlotMove(t *testing.T) {
	clusters, pools := clusterPools(t, 1, 3)
	cl := clusters[0]
	l := listen(t, pools[0])
	sl, ok := l.(pool.ShardedListener)
	require.True(t, ok, "a cluster listener subscribes sharded channels")
	require.Eventually(t, sl.Sharded, 10*time.Second, 5*time.Millisecond, "the listener found SSUBSCRIBE")

	ch := keyslot.ShardChannel("test:grant", "orders:1")
	require.NoError(t, sl.SSubscribe(bg(), ch))
	from := cl.MasterOf(ch)
	requireShardListed(t, cl, l, from, ch)
	requireHeard(t, l, from, ch, "before")

	// The slot (empty: no key lives there) moves to another master; every
	// master is told, the new owner first.
	to := cl.Masters[0]
	if to == from {
		to = cl.Masters[1]
	}
	id, err := to.Client(t).ClusterMyID(bg()).Result()
	require.NoError(t, err)
	slot := keyslot.Slot(ch)
	for _, m := range append([]*redistest.Server{to, from}, cl.Masters...) {
		require.NoError(t, m.Client(t).Do(bg(), "CLUSTER", "SETSLOT", slot, "NODE", id).Err())
	}
	requireShardListed(t, cl, l, to, ch)
	requireHeard(t, l, to, ch, "after")

	require.NoError(t, sl.SUnsubscribe(bg(), ch))
	require.Eventually(t, func() bool {
		return len(to.Client(t).PubSubShardChannels(bg(), ch).Val()) == 0
	}, 10*time.Second, 5*time.Millisecond, "SUnsubscribe reached the owner")
}

// requireShardListed waits until m, and no other master of cl, lists ch
// among its shard channels, and l reports it subscribed.
func requireShardListed(t *testing.T, cl *redistest.Cluster, l pool.Listener, m *redistest.Server, ch string) {
	t.Helper()
	require.Eventually(t, func() bool {
		if !l.(pool.SubscriptionState).Subscribed(ch) {
			return false
		}
		for _, o := range cl.Masters {
			n := len(o.Client(t).PubSubShardChannels(bg(), ch).Val())
			if (o == m) != (n == 1) {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "%s, and only it, subscribed %q", m.Addr(), ch)
}

// requireHeard publishes payload on ch with SPUBLISH at m and requires l to
// deliver it.
func requireHeard(t *testing.T, l pool.Listener, m *redistest.Server, ch, payload string) {
	t.Helper()
	n, err := m.Client(t).SPublish(bg(), ch, payload).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "one subscriber on %s", m.Addr())
	timeout := time.After(10 * time.Second)
	for {
		select {
		case msg := <-l.Messages():
			if msg.Channel == ch && msg.Payload == payload {
				return
			}
		case <-timeout:
			t.Fatalf("%q on %q not delivered", payload, ch)
		}
	}
}

// TestClusterShardedGrants runs the lock over three Redis 7 Clusters of
// three masters, each through a rueidis client in cluster mode: a waiter in
// another Client, whose own rounds come every 30s, is handed each key
// within a second of its release through sharded pub/sub. Its Client
// subscribed with SSUBSCRIBE on the master that owns the key's slot, and
// only there; the release published with SPUBLISH on that shard only; no
// master ran a PUBLISH or sent a published message over the cluster bus.
func TestClusterShardedGrants(t *testing.T) {
	clusters, pools := clusterPools(t, 3, 3)
	holder, waiter := lockClient(t, pools), lockClient(t, pools)
	// The waiter's listeners find sharded pub/sub in the background, after
	// its first wait: until then its waits use the plain channel.
	for i := 0; !shardSubscribed(t, clusters, "*"); i++ {
		require.Less(t, i, 20, "the waiter's listeners never subscribed a sharded channel")
		handOff(t, clusters, holder, waiter, "warm:"+strconv.Itoa(i), false)
	}
	for _, key := range []string{"res:1", "{orders}:7", "a}b", "res:2"} {
		before := publishes(t, clusters)
		took := handOff(t, clusters, holder, waiter, key, true)
		assert.Less(t, took, time.Second, "%q: the waiter got the lock %v after the release", key, took)
		after := publishes(t, clusters)
		sharded := 0
		for i, cl := range clusters {
			for j, m := range cl.Masters {
				assert.Equal(t, before[i][j].plain, after[i][j].plain, "%q: node %d master %d ran PUBLISH", key, i, j)
				assert.Equal(t, before[i][j].broadcast, after[i][j].broadcast,
					"%q: node %d master %d sent a message over the cluster bus", key, i, j)
				if m != cl.MasterOf(key) {
					assert.Equal(t, before[i][j].sharded, after[i][j].sharded, "%q: node %d master %d does not own it", key, i, j)
				} else if after[i][j].sharded > before[i][j].sharded {
					sharded++
				}
			}
		}
		assert.Greater(t, sharded, len(clusters)/2, "%q: the owning shards of a majority ran SPUBLISH", key)
	}
}

// lockClient returns a Client over pools, closed when t ends.
func lockClient(t *testing.T, pools []pool.Pool) *redlock.Client {
	t.Helper()
	c, err := redlock.New(pools)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	return c
}

// handOff has holder take key and waiter wait for it with rounds every 30s;
// once the waiter is queued on every cluster where the holder holds the
// key, and, if sharded, its channel for key is subscribed on the key's
// shards and only there, holder releases the key. It returns how long
// after the release the waiter got it.
func handOff(t *testing.T, clusters []*redistest.Cluster, holder, waiter *redlock.Client, key string,
	sharded bool) time.Duration {
	t.Helper()
	l, err := holder.TryLock(bg(), key, 10*time.Second)
	require.NoError(t, err, key)
	type outcome struct {
		l   *redlock.Lock
		err error
		at  time.Time
	}
	got := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg(), 20*time.Second)
		defer cancel()
		l, err := waiter.Lock(ctx, key, 10*time.Second, redlock.WithRetry(redlock.ConstantBackoff(30*time.Second)))
		got <- outcome{l, err, time.Now()}
	}()
	queue := keyslot.Companion(key, "queue")
	require.Eventually(t, func() bool {
		for _, cl := range clusters {
			c := cl.Client(t)
			if c.Get(bg(), key).Val() == l.Token() && c.ZCard(bg(), queue).Val() < 1 {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "a waiter queued for %q", key)
	if sharded {
		require.Eventually(t, func() bool { return shardSubscribed(t, clusters, key) }, 10*time.Second,
			5*time.Millisecond, "the owning shards, and only they, have the sharded channel of %q", key)
	}
	released := time.Now()
	require.NoError(t, l.Unlock(bg()))
	o := <-got
	require.NoError(t, o.err, key)
	require.NoError(t, o.l.Unlock(bg()))
	// Each Unlock returns at a majority; its release on the last node, and
	// the SPUBLISH its script runs there, may come after. Wait until the
	// key is gone from every node (both releases ran there), so that the
	// next key's count of publishes does not get this key's (a loaded run
	// counted one on a master that does not own the next key).
	require.Eventually(t, func() bool {
		for _, cl := range clusters {
			if cl.Client(t).Exists(bg(), key).Val() != 0 {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "%q released on every node", key)
	return o.at.Sub(released)
}

// shardSubscribed reports whether, on every cluster, the master that owns
// key's slot lists a sharded grant channel in that slot and no other
// master lists one; with key "*", whether every cluster lists one.
func shardSubscribed(t *testing.T, clusters []*redistest.Cluster, key string) bool {
	for _, cl := range clusters {
		listed := false
		for _, m := range cl.Masters {
			found := false
			for _, ch := range m.Client(t).PubSubShardChannels(bg(), "*redlock:grant:*").Val() {
				found = found || key == "*" || keyslot.Slot(ch) == keyslot.Slot(key)
			}
			listed = listed || found
			if key != "*" && found != (m == cl.MasterOf(key)) {
				return false
			}
		}
		if !listed {
			return false
		}
	}
	return true
}

// counts are how many PUBLISH and SPUBLISH calls a master ran, and how many
// published messages it sent to the other masters over the cluster bus.
type counts struct{ plain, sharded, broadcast int64 }

// publishes returns each master's counts, from INFO commandstats (which
// counts the commands scripts call) and CLUSTER INFO.
func publishes(t *testing.T, clusters []*redistest.Cluster) [][]counts {
	t.Helper()
	out := make([][]counts, len(clusters))
	for i, cl := range clusters {
		out[i] = make([]counts, len(cl.Masters))
		for j, m := range cl.Masters {
			info, err := m.Client(t).Info(bg(), "commandstats").Result()
			require.NoError(t, err)
			bus, err := m.Client(t).ClusterInfo(bg()).Result()
			require.NoError(t, err)
			out[i][j] = counts{
				plain:     stat(info, "cmdstat_publish:calls=", ","),
				sharded:   stat(info, "cmdstat_spublish:calls=", ","),
				broadcast: stat(bus, "cluster_stats_messages_publish_sent:", "\r"),
			}
		}
	}
	return out
}

// stat reads the number after prefix on a line of info, up to end; 0 if
// absent.
func stat(info, prefix, end string) int64 {
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			n, _ := strconv.ParseInt(strings.SplitN(rest, end, 2)[0], 10, 64)
			return n
		}
	}
	return 0
}

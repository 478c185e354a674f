package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// Persistence on Redis Cluster nodes (issue 36, item 1). Each Redlock node
// is a cluster formed as users form one (redis-cli --cluster create, no
// fresh-start declaration), every server with appendonly yes and
// appendfsync always, and the Clients keep the default quarantine (a day):
// a master that never took over counts at once, also after a restart; one
// that took over does not, also after a restart that made Redis forget
// the promotion. Each starts 9 to 18 servers, a load that, added to the
// package's parallel cluster tests on a shared machine, made first calls
// miss their node timeouts while they ran serially without warmed pools:
// cliPools warms every pool (a connection to every shard master) first,
// with a bound of its own.

// cliPools returns one pool per cluster, made by pool.FromURL from a
// cluster URL that names every server (replicas too) as a seed, each
// warmed (warm) so that a test's first call does not also pay the slot
// map's load and the dials beside the package's other tests.
func cliPools(t *testing.T, clusters []*redistest.ReplicatedCluster) []pool.Pool {
	t.Helper()
	pools := make([]pool.Pool, len(clusters))
	for i, c := range clusters {
		addrs := c.Addrs()
		for _, r := range c.Replicas {
			if r != nil {
				addrs = append(addrs, r.Addr())
			}
		}
		p, err := pool.FromURL("redis+cluster://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr="))
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		pools[i] = p
	}
	warm(t, pools)
	return pools
}

// requireNoDeclaration checks the premise: no shard of the clusters
// carries a fresh-start declaration.
func requireNoDeclaration(t *testing.T, clusters []*redistest.ReplicatedCluster) {
	t.Helper()
	for i, c := range clusters {
		for _, m := range c.Masters {
			keys, err := cmd(t, m, "KEYS", "redlock:fresh-start*").StringSlice()
			require.NoError(t, err)
			require.Empty(t, keys, "node %d master %s declares a fresh start", i, m.Addr())
		}
	}
}

// clusterWritable is how long a restarted cluster master may take to serve
// its slots again: Redis keeps a master that starts in a failed cluster
// unwritable for 2s (CLUSTER_WRITABLE_DELAY), and its peers clear their
// failure report of it after twice the node timeout (1s in redistest).
const clusterWritable = 10 * time.Second

// awaitSeen polls done every 20ms until it reports true, for at most
// within; on time-out it fails t with what was awaited and the last thing
// done saw.
func awaitSeen(t *testing.T, within time.Duration, what string, done func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, seen := done()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s; last seen: %s", within, what, seen)
		}
		time.Sleep(20 * time.Millisecond) // a poll's pace, not a synchronisation
	}
}

// restartMasters restarts servers, cluster masters with their data on
// disk, all at once, and waits until each serves key's slot again as a
// writable master.
func restartMasters(t *testing.T, key string, servers ...*redistest.Server) {
	t.Helper()
	for _, s := range servers {
		s.Restart(t)
	}
	awaitSeen(t, clusterWritable, fmt.Sprintf("restarted masters serve the slot of %q again", key), func() (bool, string) {
		for _, s := range servers {
			if ok, why := probe(s, key); !ok {
				return false, s.Addr() + ": " + why
			}
		}
		return true, ""
	})
}

// tryUntilAnswered tries key with c until the nodes answered as expected
// (a pool's first call after a restart may meet a broken connection), and
// returns the last outcome: the lock, or a failure whose every node's
// cause is want or ErrPending (not needed for the decision).
func tryUntilAnswered(t *testing.T, c *redlock.Client, key string, want error) (*redlock.Lock, error) {
	t.Helper()
	var l *redlock.Lock
	var err error
	awaitSeen(t, clusterWritable, fmt.Sprintf("every node answers %q with the lock or %v", key, want), func() (bool, string) {
		l, err = c.TryLock(bg(), key, 10*time.Second)
		var qe *redlock.QuorumError
		if err == nil || !errors.As(err, &qe) {
			return true, ""
		}
		for _, ne := range qe.Nodes {
			if !errors.Is(ne, want) && !errors.Is(ne, redlock.ErrPending) {
				return false, err.Error()
			}
		}
		return true, ""
	})
	return l, err
}

func TestRealClusterPersistedMastersCountAtOnce(t *testing.T) {
	parallel(t)
	clusters := redistest.StartCLIClusters(t, 3, 3, 0, redistest.AOFAlways)
	requireNoDeclaration(t, clusters)
	pools := cliPools(t, clusters)
	a, b := newPatientClient(t, pools), newPatientClient(t, pools) // the default quarantine
	keys := []string{"orders:42", "{orders}:1", "res:7", "x{y}z"}

	t.Run("plain and extended", func(t *testing.T) {
		for _, key := range keys {
			l, err := a.TryLock(bg(), key, 10*time.Second)
			require.NoError(t, err, key)
			_, err = b.TryLock(bg(), key, 10*time.Second)
			require.ErrorIs(t, err, redlock.ErrNotObtained, key)
			require.ErrorIs(t, err, redlock.ErrTaken, key)
			require.NotErrorIs(t, err, redlock.ErrNodeQuarantined, key)
			require.NoError(t, l.Extend(bg(), 10*time.Second), key)
			require.NoError(t, l.Unlock(bg()), key)
		}
	})
	t.Run("fenced", func(t *testing.T) {
		for _, key := range keys {
			var last uint64
			for range 2 {
				l, err := a.TryLock(bg(), key, 10*time.Second, redlock.WithFencing())
				require.NoError(t, err, key)
				require.Greater(t, l.Fence(), last, "fences of %q increase", key)
				last = l.Fence()
				require.NoError(t, l.Unlock(bg()))
			}
		}
	})
	t.Run("fair", func(t *testing.T) {
		for _, key := range keys {
			l, err := a.TryLock(bg(), key, 10*time.Second, redlock.WithFairness())
			require.NoError(t, err, key)
			require.NoError(t, l.Unlock(bg()), key)
		}
	})
	t.Run("a blocking Lock gets the key at its release", func(t *testing.T) {
		key := keys[0]
		held, err := a.TryLock(bg(), key, faultTTL)
		require.NoError(t, err)
		a.WaitIdle()
		got := waitFor(func(ctx context.Context) (*redlock.Lock, error) { return b.Lock(ctx, key, faultTTL) })
		requireClusterQueued(t, plainClusters(clusters), key, held.Token())
		require.NoError(t, held.Unlock(bg()))
		o := <-got
		require.NoError(t, o.err, "the waiter, bounded by 5s, after the release")
		require.NoError(t, o.l.Unlock(bg()))
	})
	t.Run("a master restarted with its data counts at once", func(t *testing.T) {
		key := keys[0]
		// Valid past both waits below, each bounded by clusterWritable.
		l, err := a.TryLock(bg(), key, 3*clusterWritable)
		require.NoError(t, err)
		var masters []*redistest.Server
		for _, c := range clusters {
			masters = append(masters, c.MasterOf(key))
		}
		restartMasters(t, key, masters...)
		_, err = tryUntilAnswered(t, b, key, redlock.ErrTaken)
		require.ErrorIs(t, err, redlock.ErrNotObtained, "the restarted masters kept the lock")
		require.NotErrorIs(t, err, redlock.ErrNodeQuarantined)
		require.NoError(t, l.Extend(bg(), 10*time.Second), "the restarted masters count for the holder")
		require.NoError(t, l.Unlock(bg()))
		// Unlock returns at the majority: the last node's release may be
		// on its way, and a TryLock that met the old lock there waited
		// only the contended grace (50ms) for the others, and was refused
		// on a loaded machine ("node 2: held by another owner; nodes 0,
		// 1: no answer before the decision").
		a.WaitIdle()
		fresh := newClient(t, pools) // created after the restarts
		l, err = fresh.TryLock(bg(), key, 10*time.Second, redlock.WithFencing())
		require.NoError(t, err)
		require.NoError(t, l.Unlock(bg()))
	})
}

// plainClusters returns the Clusters of rcs.
func plainClusters(rcs []*redistest.ReplicatedCluster) []*redistest.Cluster {
	out := make([]*redistest.Cluster, len(rcs))
	for i, c := range rcs {
		out[i] = c.Cluster
	}
	return out
}

// TestRealClusterPersistedPartlyStaysQuarantined: clusters whose masters
// do not persist every write, or hide whether they do, count for nobody
// while young.
func TestRealClusterPersistedPartlyStaysQuarantined(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name  string
		p     redistest.Persistence
		extra []string
		says  string
	}{
		{"appendfsync everysec", redistest.AOFEverySec, nil, "persistence partial"},
		{"CONFIG renamed away", redistest.AOFAlways, []string{"--rename-command", "CONFIG", ""}, "persistence unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // clusters of its own
			clusters := redistest.StartCLIClusters(t, 3, 3, 0, tc.p, tc.extra...)
			requireNoDeclaration(t, clusters)
			c := newClient(t, cliPools(t, clusters))
			_, err := c.TryLock(bg(), "orders:42", 10*time.Second)
			require.ErrorIs(t, err, redlock.ErrNotObtained)
			var qe *redlock.QuorumError
			require.ErrorAs(t, err, &qe)
			out := 0
			for _, ne := range qe.Nodes {
				if errors.Is(ne, redlock.ErrPending) {
					continue // the decision came before its answer
				}
				require.ErrorIs(t, ne, redlock.ErrNodeQuarantined)
				assert.Contains(t, ne.Error(), "restarted", "a young master")
				assert.Contains(t, ne.Error(), tc.says)
				out++
			}
			assert.GreaterOrEqual(t, out, 2, "a majority of young masters out: %v", err)
		})
	}
}

// TestRealClusterPersistedFailoverStaysQuarantined: on three clusters of
// three masters with a replica each, every server persisting every write,
// the replica of a key's shard takes over on clusters 0 and 1 (CLUSTER
// FAILOVER). The new masters stay out: on cluster 0 seen in its promoted
// run, then restarted (Redis then forgets the promotion: the shard's
// marker remembers it); on cluster 1 restarted before anyone saw it
// promoted (the marker it received from the old master names another
// node). A key of another shard, whose masters never took over, locks at
// once throughout.
func TestRealClusterPersistedFailoverStaysQuarantined(t *testing.T) {
	first(t) // 18 servers, two failovers and two restarts, each a wait for the clusters
	clusters := redistest.StartCLIClusters(t, 3, 3, 1, redistest.AOFAlways)
	requireNoDeclaration(t, clusters)
	pools := cliPools(t, clusters)
	c := newClient(t, pools)
	key, other := "orders:42", "orders:43"
	for i := 0; sameShardAny(clusters, key, other); i++ {
		other = fmt.Sprintf("orders:o%d", i)
	}
	for _, k := range []string{key, other} {
		l, err := c.TryLock(bg(), k, time.Second)
		require.NoError(t, err, "%s counts at once before the failover", k)
		require.NoError(t, l.Unlock(bg()))
	}
	for i := range 2 {
		m := clusters[i].MasterOf(key)
		// The replica has every write of its master, the shard's marker too.
		n, err := cmd(t, m, "WAIT", 1, 5000).Int()
		require.NoError(t, err)
		require.Equal(t, 1, n, "the replica of %s acknowledged its writes", m.Addr())
		failOver(t, clusters[i], key)
	}
	r0, r1 := clusters[0].Replicas[shardOf(clusters[0], key)], clusters[1].Replicas[shardOf(clusters[1], key)]
	restartMasters(t, key, r1) // promoted, never seen as such, restarted

	refused := func(c *redlock.Client, promoted, before int) {
		t.Helper()
		_, err := tryUntilAnswered(t, c, key, redlock.ErrNodeQuarantined)
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, redlock.ErrNodeQuarantined)
		assert.Equal(t, promoted, strings.Count(err.Error(), "took over (a failover)"), "%v", err)
		assert.Equal(t, before, strings.Count(err.Error(), "took over before its run"), "%v", err)
	}
	refused(c, 1, 1)
	refused(newClient(t, pools), 1, 1) // a Client created after the failovers

	restartMasters(t, key, r0) // promoted, seen, restarted
	refused(c, 0, 2)
	refused(newClient(t, pools), 0, 2)

	l, err := c.TryLock(bg(), other, 10*time.Second, redlock.WithFencing())
	require.NoError(t, err, "a shard whose masters never took over counts at once")
	require.NoError(t, l.Unlock(bg()))
}

// failOver makes the replica of key's shard of c its master with CLUSTER
// FAILOVER (the replica catches up, then takes over; the old master
// becomes its replica), and waits until the cluster routes the shard's
// keys to it. Redis gives a manual failover 5s (CLUSTER_MF_TIMEOUT) and
// then abandons it, as when the replica's election found the masters
// busy (seen beside the package's other tests on a loaded machine): a
// failover not done by then is asked for again, three times at most.
func failOver(t *testing.T, c *redistest.ReplicatedCluster, key string) {
	t.Helper()
	const mfTimeout, tries = 5 * time.Second, 3
	r := c.Replicas[shardOf(c, key)]
	what := fmt.Sprintf("the replica %s of the shard of %q serves it as master", r.Addr(), key)
	var errs []error
	for range tries {
		require.NoError(t, cmd(t, r, "CLUSTER", "FAILOVER").Err())
		err := redistest.Await(mfTimeout+clusterWritable, what, func() (bool, string) { return probe(r, key) })
		if err == nil {
			return
		}
		errs = append(errs, err)
	}
	t.Fatalf("%d manual failovers, none done: %v", tries, errors.Join(errs...))
}

// probe reports whether s accepts a write in key's slot, and else why not.
func probe(s *redistest.Server, key string) (bool, string) {
	ctx, cancel := context.WithTimeout(bg(), time.Second)
	defer cancel()
	if err := s.WriteProbe(ctx, keyslot.Companion(key, "probe")); err != nil {
		return false, err.Error()
	}
	return true, ""
}

// sameShardAny reports whether a and b are on one shard of some cluster.
func sameShardAny(clusters []*redistest.ReplicatedCluster, a, b string) bool {
	for _, c := range clusters {
		if shardOf(c, a) == shardOf(c, b) {
			return true
		}
	}
	return false
}

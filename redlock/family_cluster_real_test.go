package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// The lock family (read locks, permits, multi-locks) on real Redis
// Clusters: run as subtests of TestRealClusterLocksFencesQueuesAndGrants-
// OverManySlots, on its clusters of three masters, whose final check also
// finds that no master ever answered CROSSSLOT, MOVED or ASK.

// requireUntouched checks that no cluster holds name: a caller's name (such
// as the "KEY:readers" and "KEY:fence" earlier versions wrote) that the
// library, whose keys all live under keyspace.Prefix in their key's slot,
// must never write.
func requireUntouched(t *testing.T, clients []*redis.ClusterClient, name string) {
	t.Helper()
	for i, c := range clients {
		n, err := c.Exists(bg(), name).Result()
		require.NoError(t, err)
		require.Zero(t, n, "node %d holds %q", i, name)
	}
}

// untagged reports whether key has no hash tag: its companion keys'
// standalone names lie outside its slot.
func untagged(key string) bool {
	_, ok := keyslot.Tag(key)
	return !ok
}

// clusterReaders checks readers and writers on every key of keys: readers
// share, a writer excludes them and they exclude it, fences grow across
// both, and the readers' zset and the fence counter lie in the key's slot.
func clusterReaders(t *testing.T, clusters []*redistest.Cluster, a, b *redlock.Client, keys []string) {
	clients := clusterClients(t, clusters)
	for _, key := range keys {
		r1, err := a.TryRLock(bg(), key, 10*time.Second, redlock.WithFencing())
		require.NoError(t, err, key)
		r2, err := b.TryRLock(bg(), key, 10*time.Second, redlock.WithFencing())
		require.NoError(t, err, "%q: readers share", key)
		assert.Greater(t, r2.Fence(), r1.Fence(), "%q: a reader after a reader", key)
		_, err = b.TryLock(bg(), key, 10*time.Second)
		require.ErrorIs(t, err, redlock.ErrNotObtained, "%q: readers exclude a writer", key)
		requireInSlotOn(t, clients, key, keyspace.Cluster{}.Readers(key))
		requireInSlotOn(t, clients, key, redlock.ClusterFenceKey(key))
		require.NoError(t, r1.Extend(bg(), 10*time.Second), key)
		require.NoError(t, r1.Unlock(bg()), key)
		require.NoError(t, r2.Unlock(bg()), key)
		// Each release needs only a majority: the test waits for the
		// others to land before it asks whether the key is free (see
		// clusterPermits).
		a.WaitIdle()
		b.WaitIdle()

		w, err := b.TryLock(bg(), key, 10*time.Second, redlock.WithFencing())
		require.NoError(t, err, "%q: the last reader freed the key", key)
		assert.Greater(t, w.Fence(), r2.Fence(), "%q: a writer after readers", key)
		_, err = a.TryRLock(bg(), key, 10*time.Second)
		require.ErrorIs(t, err, redlock.ErrNotObtained, "%q: a writer excludes readers", key)
		require.ErrorIs(t, err, redlock.ErrTaken, key)
		require.NoError(t, w.Unlock(bg()), key)
		a.WaitIdle()
		requireUntouched(t, clients, key+":readers")
		requireUntouched(t, clients, key+":fence")
	}
}

// clusterPermits checks two permits of every key of keys: never a third
// holder, fences growing, the fence counter in the key's slot.
func clusterPermits(t *testing.T, clusters []*redistest.Cluster, a, b *redlock.Client, keys []string) {
	clients := clusterClients(t, clusters)
	for _, key := range keys {
		sem := "sem:" + key // a semaphore is a hash, not a lock key
		if !untagged(key) {
			sem = key + ":sem"
		}
		p1, err := a.TryAcquirePermit(bg(), sem, 2, 10*time.Second, redlock.WithFencing())
		require.NoError(t, err, sem)
		p2, err := b.TryAcquirePermit(bg(), sem, 2, 10*time.Second, redlock.WithFencing())
		require.NoError(t, err, sem)
		assert.Greater(t, p2.Fence(), p1.Fence(), "%q: fences grow", sem)
		_, err = b.TryAcquirePermit(bg(), sem, 2, 10*time.Second)
		require.ErrorIs(t, err, redlock.ErrNotObtained, "%q: no third holder", sem)
		require.ErrorIs(t, err, redlock.ErrTaken, sem)
		requireInSlotOn(t, clients, sem, redlock.ClusterFenceKey(sem))
		require.NoError(t, p1.Extend(bg(), 10*time.Second), sem)
		require.NoError(t, p1.Unlock(bg()), sem)
		// The release needs only a majority; one node's part of it may
		// land later (a loaded run: node 2 still counted p1, and refused,
		// while nodes 0 and 1 had not answered within the contended
		// grace). "Free" is asked once it has landed everywhere.
		a.WaitIdle()
		p3, err := b.TryAcquirePermit(bg(), sem, 2, 10*time.Second, redlock.WithFencing())
		require.NoError(t, err, "%q: a released permit is free", sem)
		assert.Greater(t, p3.Fence(), p2.Fence(), "%q: fences grow", sem)
		require.NoError(t, p2.Unlock(bg()), sem)
		require.NoError(t, p3.Unlock(bg()), sem)
		b.WaitIdle()
		requireUntouched(t, clients, sem+":fence")
	}
}

// clusterMultiSets are multi-lock key sets, each in one slot: keys sharing
// a hash tag, over many tags, and single keys without one, whose companion
// keys' standalone names would lie in other slots.
func clusterMultiSets() [][]string {
	sets := [][]string{{"res:multi"}, {"a}b"}, {"{}{t}"}}
	for i := range 8 {
		tag := fmt.Sprintf("{cart:%d}", i)
		sets = append(sets, []string{tag + ":items", tag + ":invoice", "x" + tag})
	}
	return sets
}

// clusterMulti checks multi-locks over sets whose keys share a slot: the
// set excludes an overlapping set and a single lock on one of its keys, it
// extends and unlocks, and fences grow across multi and single locks, with
// every counter in its key's slot.
func clusterMulti(t *testing.T, clusters []*redistest.Cluster, a, b *redlock.Client) {
	clients := clusterClients(t, clusters)
	for _, keys := range clusterMultiSets() {
		last := keys[len(keys)-1]
		m, err := a.TryLockAll(bg(), keys, 10*time.Second, redlock.WithFencing())
		require.NoError(t, err, keys)
		_, err = b.TryLockAll(bg(), []string{last}, 10*time.Second)
		require.ErrorIs(t, err, redlock.ErrNotObtained, "%q: an overlapping set is excluded", keys)
		_, err = b.TryLock(bg(), last, 10*time.Second)
		require.ErrorIs(t, err, redlock.ErrNotObtained, "%q: a single lock on a key is excluded", keys)
		require.NoError(t, m.Extend(bg(), 10*time.Second), keys)
		require.NoError(t, m.Unlock(bg()), keys)
		a.WaitIdle() // the release on every node, not only a majority (see clusterPermits)
		for _, k := range keys {
			requireInSlotOn(t, clients, k, redlock.ClusterFenceKey(k))
		}
		s, err := b.TryLock(bg(), last, 10*time.Second, redlock.WithFencing())
		require.NoError(t, err, keys)
		assert.Greater(t, s.Fence(), m.Fence(), "%q: a single lock after the multi-lock", keys)
		require.NoError(t, s.Unlock(bg()), keys)
		m2, err := a.TryLockAll(bg(), keys, 10*time.Second, redlock.WithFencing())
		require.NoError(t, err, keys)
		assert.Greater(t, m2.Fence(), s.Fence(), "%q: a multi-lock after the single lock", keys)
		require.NoError(t, m2.Unlock(bg()), keys)
	}
	// A companion of a key is refused; the name earlier versions gave it
	// ("fence{K}", in K's slot) is an ordinary key of the caller's.
	_, err := a.TryLockAll(bg(), []string{"res:multi", redlock.ClusterFenceKey("res:multi")}, 10*time.Second)
	require.ErrorIs(t, err, keyspace.ErrReserved)
	m, err := a.TryLockAll(bg(), []string{"res:multi", "fence{res:multi}"}, 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, m.Unlock(bg()))
	// Keys of several slots are refused before any node is called.
	_, err = a.TryLockAll(bg(), []string{"cart:1", "cart:2"}, 10*time.Second)
	require.ErrorContains(t, err, "must hash to one slot")
	require.NotErrorIs(t, err, redlock.ErrNotObtained, "bad input, not a refusal by the nodes")
}

// clusterFamilyWakes checks that a blocked RLock, AcquirePermit and LockAll
// in another Client, whose own retries come every 30s, are woken within a
// second by the release that frees their key.
func clusterFamilyWakes(t *testing.T, clusters []*redistest.Cluster, pools []pool.Pool) {
	holder := defaultClient(t, pools)
	waiter := defaultClient(t, pools)
	cases := []struct {
		name, key string
		hold      func() (*redlock.Lock, error)
		wait      func(ctx context.Context) (*redlock.Lock, error)
	}{
		{"RLock", "wake:doc",
			func() (*redlock.Lock, error) { return holder.TryLock(bg(), "wake:doc", faultTTL) },
			func(ctx context.Context) (*redlock.Lock, error) {
				return waiter.RLock(ctx, "wake:doc", faultTTL, slowRetry)
			}},
		{"AcquirePermit", "wake:sem",
			func() (*redlock.Lock, error) { return holder.TryAcquirePermit(bg(), "wake:sem", 1, faultTTL) },
			func(ctx context.Context) (*redlock.Lock, error) {
				return waiter.AcquirePermit(ctx, "wake:sem", 1, faultTTL, slowRetry)
			}},
		{"LockAll", "{wake}:b",
			func() (*redlock.Lock, error) { return holder.TryLock(bg(), "{wake}:b", faultTTL) },
			func(ctx context.Context) (*redlock.Lock, error) {
				return waiter.LockAll(ctx, []string{"{wake}:a", "{wake}:b", "x{wake}"}, faultTTL, slowRetry)
			}},
	}
	for _, tc := range cases {
		held, err := tc.hold()
		require.NoError(t, err, tc.name)
		holder.WaitIdle()
		got := waitFor(tc.wait)
		requireClusterWatched(t, clusters, tc.key)
		requireWoken(t, held, got)
	}
}

// clusterFamily runs the lock family's checks on clusters.
func clusterFamily(t *testing.T, clusters []*redistest.Cluster, pools []pool.Pool, keys []string) {
	a := newPatientClient(t, pools)
	b := newPatientClient(t, pools)
	t.Run("readers and writers", func(t *testing.T) { clusterReaders(t, clusters, a, b, keys) })
	t.Run("permits", func(t *testing.T) { clusterPermits(t, clusters, a, b, keys) })
	t.Run("multi-locks over keys sharing a slot", func(t *testing.T) { clusterMulti(t, clusters, a, b) })
	t.Run("blocked calls woken by a release in another Client", func(t *testing.T) {
		clusterFamilyWakes(t, clusters, pools)
	})
}

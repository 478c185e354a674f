package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// Every key the library writes has a TTL, but for the ones that must
// outlive every lock (keyspace.Lasting: fence counters, an election's term
// counter, fresh-start declarations): after every kind and path below
// (hand-offs through the queue, a wait whose context ends mid-wait, a
// waiter whose Client closes mid-wait, LockAll, readers, permits,
// elections and a leader that vanished, fencing, an owner's re-entry, the
// lock-delay, and a wait on quarantined stock nodes), a SCAN of every node
// finds no other key without one. A key without a TTL is there for good:
// the README's Quick start, interrupted, left invoice:42:queue:entries on
// every node, which then blocked `redlock nodes declare-fresh`.
func TestRealEveryKeyTheLibraryWritesHasATTL(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	a, b := newClient(t, pools), newClient(t, pools)
	const ttl = 10 * time.Second

	// awaitOn waits until name exists on a majority: a waiter's place (its
	// queue or its watch set) is there, so a release finds it.
	awaitOn := func(name string) {
		t.Helper()
		awaitState(t, 2*nodeCallBound, name+" on a majority", func() bool {
			n := 0
			for _, s := range servers {
				if c, err := s.Client(t).Exists(bg(), name).Result(); err == nil && c == 1 {
					n++
				}
			}
			return n >= len(servers)/2+1
		}, onServers(servers, name))
	}
	names := keyspace.Standalone{}
	// handOff holds key with a, starts wait (b's blocked call), waits for
	// its place (place), releases, and gives back what wait got.
	handOff := func(hold func() (*redlock.Lock, error), place string, wait func() (*redlock.Lock, error)) {
		t.Helper()
		held, err := hold()
		require.NoError(t, err)
		got := make(chan error, 1)
		go func() {
			l, err := wait()
			if err == nil {
				err = l.Unlock(bg())
			}
			got <- err
		}()
		awaitOn(place)
		require.NoError(t, held.Unlock(bg()))
		require.NoError(t, <-got)
	}

	t.Run("lock, fencing, owner re-entry", func(t *testing.T) {
		l, err := a.TryLock(bg(), "ttl:plain", ttl)
		require.NoError(t, err)
		require.NoError(t, l.Unlock(bg()))
		f, err := a.TryLock(bg(), "ttl:fenced", ttl, redlock.WithFencing())
		require.NoError(t, err)
		require.NoError(t, f.Unlock(bg()))
		o1, err := a.TryLock(bg(), "ttl:owned", ttl, redlock.WithOwner("w"), redlock.WithFencing())
		require.NoError(t, err)
		o2, err := a.TryLock(bg(), "ttl:owned", ttl, redlock.WithOwner("w"))
		require.NoError(t, err)
		require.NoError(t, o2.Unlock(bg()))
		require.NoError(t, o1.Unlock(bg()))
	})

	t.Run("queue hand-off", func(t *testing.T) {
		handOff(func() (*redlock.Lock, error) { return a.TryLock(bg(), "ttl:queued", ttl) },
			names.Queue("ttl:queued")[1],
			func() (*redlock.Lock, error) { return b.Lock(bg(), "ttl:queued", ttl) })
	})

	t.Run("queue wait whose context ends mid-wait", func(t *testing.T) {
		held, err := a.TryLock(bg(), "ttl:cancelled", ttl)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(bg())
		got := make(chan error, 1)
		go func() {
			_, err := b.Lock(ctx, "ttl:cancelled", ttl)
			got <- err
		}()
		awaitOn(names.Queue("ttl:cancelled")[1])
		cancel()
		assert.ErrorIs(t, <-got, context.Canceled)
		require.NoError(t, held.Unlock(bg()))
	})

	t.Run("queue wait whose Client closes mid-wait", func(t *testing.T) {
		held, err := a.TryLock(bg(), "ttl:closed", ttl)
		require.NoError(t, err)
		gone := newClient(t, pools)
		got := make(chan error, 1)
		go func() {
			_, err := gone.Lock(bg(), "ttl:closed", ttl)
			got <- err
		}()
		awaitOn(names.Queue("ttl:closed")[1])
		require.NoError(t, gone.Close())
		assert.Error(t, <-got)
		require.NoError(t, held.Unlock(bg()))
	})

	t.Run("LockAll wait", func(t *testing.T) {
		handOff(func() (*redlock.Lock, error) { return a.TryLock(bg(), "ttl:m1", ttl) },
			names.Watch("ttl:m1"),
			func() (*redlock.Lock, error) { return b.LockAll(bg(), []string{"ttl:m1", "ttl:m2"}, ttl) })
	})

	t.Run("readers and a waiting writer", func(t *testing.T) {
		handOff(func() (*redlock.Lock, error) { return a.TryLock(bg(), "ttl:rw", ttl) },
			names.Watch("ttl:rw"),
			func() (*redlock.Lock, error) { return b.RLock(bg(), "ttl:rw", ttl, redlock.WithFencing()) })
		// A writer queued behind a reader gets the key from the reader's
		// release (rlock_release.lua's hand-off).
		handOff(func() (*redlock.Lock, error) { return b.TryRLock(bg(), "ttl:rw", ttl) },
			names.Queue("ttl:rw")[1],
			func() (*redlock.Lock, error) { return a.Lock(bg(), "ttl:rw", ttl) })
	})

	t.Run("permits", func(t *testing.T) {
		handOff(func() (*redlock.Lock, error) {
			return a.TryAcquirePermit(bg(), "ttl:permits", 1, ttl, redlock.WithFencing())
		},
			names.Watch("ttl:permits"),
			func() (*redlock.Lock, error) { return b.AcquirePermit(bg(), "ttl:permits", 1, ttl) })
	})

	t.Run("owner waits", func(t *testing.T) {
		handOff(func() (*redlock.Lock, error) { return a.TryLock(bg(), "ttl:owner-waits", ttl) },
			names.Watch("ttl:owner-waits"),
			func() (*redlock.Lock, error) { return b.Lock(bg(), "ttl:owner-waits", ttl, redlock.WithOwner("w")) })
	})

	t.Run("lock-delay", func(t *testing.T) {
		d1 := newClient(t, pools, redlock.WithLockDelay(time.Second))
		d2 := newClient(t, pools, redlock.WithLockDelay(time.Second))
		handOff(func() (*redlock.Lock, error) { return d1.TryLock(bg(), "ttl:delayed", ttl, redlock.WithFencing()) },
			names.Queue("ttl:delayed")[1],
			func() (*redlock.Lock, error) { return d2.Lock(bg(), "ttl:delayed", ttl) })
	})

	t.Run("elections, and a leader that vanished", func(t *testing.T) {
		first, err := a.Campaign(bg(), "ttl", "a", ttl)
		require.NoError(t, err)
		vanishing := newClient(t, pools)
		got := make(chan error, 1)
		go func() {
			_, err := vanishing.Campaign(bg(), "ttl", "b", ttl)
			got <- err
		}()
		waitCampaigner(t, servers, "ttl")
		require.NoError(t, first.Resign(bg()))
		require.NoError(t, <-got)
		ld, err := a.Leader(bg(), "ttl")
		require.NoError(t, err)
		assert.Equal(t, "b", ld.Value)
		require.NoError(t, vanishing.Close()) // no Resign: its record stays, to expire
	})

	ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
	defer cancel()
	for _, c := range []*redlock.Client{a, b} {
		c.WaitIdle()
	}
	requireAllTimed(ctx, t, servers)
}

// A wait on stock nodes, which sit in the restart quarantine, leaves no
// key without a TTL either: a Do whose context ends while it waits for
// the nodes to count (the README's Quick start, interrupted).
func TestRealWaitOnQuarantinedNodesLeavesNoUntimedKey(t *testing.T) {
	parallel(t)
	servers := redistest.StartNUndeclared(t, 5, redistest.NoPersistence)
	pools := make([]pool.Pool, len(servers))
	for i, s := range servers {
		p, err := pool.FromURL(s.URL())
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		pools[i] = p
	}
	c := newClient(t, pools)
	ctx, cancel := context.WithTimeout(bg(), 2*time.Second)
	defer cancel()
	err := c.Do(ctx, "invoice:42", 10*time.Second, func(context.Context) error { return nil })
	require.Error(t, err, "stock nodes count only after the quarantine")
	assert.ErrorIs(t, err, redlock.ErrNotObtained)
	c.WaitIdle()
	actx, acancel := context.WithTimeout(bg(), 10*time.Second)
	defer acancel()
	requireAllTimed(actx, t, servers)
}

// requireAllTimed fails t, listing them by shape, when a node of servers
// holds a key without a TTL beyond keyspace.Lasting.
func requireAllTimed(ctx context.Context, t *testing.T, servers []*redistest.Server) {
	t.Helper()
	for i, s := range servers {
		keys, err := redistest.Untimed(ctx, s.Client(t))
		require.NoError(t, err, "node %d", i)
		assert.Empty(t, keys, "node %d holds keys without a TTL: %s", i, redistest.ByShape(keys))
	}
}

// An election's leader record has a TTL (a leader that vanished leaves
// none behind), and lives as long as the leadership: each extension
// carries it on with the key, so Leader reads the value long after the
// first TTL ran out.
func TestRealLeaderRecordLivesAsLongAsTheLeadership(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 3)
	c := newClient(t, pools, redlock.WithNodeTimeout(300*time.Millisecond))
	const ttl = 3 * time.Second
	ls, err := c.Campaign(bg(), "record-ttl", "me", ttl)
	require.NoError(t, err)
	defer func() { assert.NoError(t, ls.Resign(bg())) }()
	record := leaderKey(t, "record-ttl")
	firstEnd := time.Now().Add(ttl)
	awaitState(t, 2*ttl, "the leadership's first TTL to run out while it lasts", func() bool {
		return time.Now().After(firstEnd) && ls.Err() == nil
	}, func() string { return fmt.Sprintf("leadership error %v", ls.Err()) })
	ld, err := c.Leader(bg(), "record-ttl")
	require.NoError(t, err)
	assert.Equal(t, "me", ld.Value)
	for i, s := range servers {
		pttl, err := s.Client(t).PTTL(bg(), record).Result()
		require.NoError(t, err)
		assert.Positive(t, pttl, "node %d: the record has a TTL", i)
	}
}

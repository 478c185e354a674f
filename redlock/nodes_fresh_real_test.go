package redlock_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// DeclareFresh never declares a node while any node of the set carries
// evidence of a lease that may be valid (issue 58, item 3). Each test
// holds a lease on five unpersisted nodes, restarts nodes 0-2 empty (a
// restart, which the quarantine must judge, not a new deployment), and
// asks for the declaration: refused, for nodes 3 and 4, none declared.

// leaseTTL outlives each test with room to spare: the leases, and the
// ceilings they raise, live throughout.
const leaseTTL = time.Minute

// requireRefusedOn requires DeclareFresh's err to refuse the declaration
// for nodes want (and for no other node as not fresh), naming the live
// lease ceiling and when it expires, with no node declared for its run.
func requireRefusedOn(t *testing.T, servers []*redistest.Server, decl []redlock.Declaration, err error, want ...int) {
	t.Helper()
	require.ErrorIs(t, err, redlock.ErrNotFresh, "declared %v", decl)
	t.Logf("refused: %v", err)
	assert.Nil(t, decl)
	var notFresh []int
	for _, ne := range nodeErrorsIn(err) {
		if errors.Is(ne, redlock.ErrNotFresh) {
			notFresh = append(notFresh, ne.Node)
			assert.Contains(t, ne.Error(), "live redlock:ceiling", "node %d", ne.Node)
			assert.Contains(t, ne.Error(), "expires in", "node %d", ne.Node)
		} else {
			t.Logf("node %d failed otherwise: %v", ne.Node, ne) // a loaded machine
		}
	}
	slices.Sort(notFresh)
	assert.Equal(t, want, notFresh, "the nodes refused as not fresh, in %v", err)
	for i, s := range servers {
		run, err := s.Client(t).Get(bg(), pool.FreshStartKey).Result()
		if err == nil {
			info := s.Client(t).Info(bg(), "server").Val()
			assert.Contains(t, info, "run_id:"+run, "node %d declared for its current run", i)
		}
	}
}

// A multi-lock held on all five nodes, nodes 0-2 restarted empty: nodes 3
// and 4 hold the multi-lock's keys ("m:" tokens) and their ceilings.
func TestRealDeclareFreshRefusesWhileMultiLockLives(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	c := newClient(t, pools)
	l, err := c.TryLockAll(bg(), []string{"a", "b"}, leaseTTL)
	require.NoError(t, err)
	c.WaitIdle()
	require.Equal(t, 5, realHolders(t, servers, "a", l.Token()), "the multi-lock on every node")

	restartEmpty(t, servers[:3])
	fresh := openPools(t, servers)
	decl, err := redlock.DeclareFresh(bg(), fresh)
	requireRefusedOn(t, servers, decl, err, 3, 4)
}

// A permit held in slot "1" only (the holder of slot "0" released it),
// nodes 0-2 restarted empty: nodes 3 and 4 hold the permit and their
// ceilings.
func TestRealDeclareFreshRefusesWhilePermitLivesInAnySlot(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	c := newClient(t, pools)
	var held []*redlock.Lock
	for range 2 {
		p, err := c.TryAcquirePermit(bg(), "slots", 2, leaseTTL)
		require.NoError(t, err)
		held = append(held, p)
	}
	c.WaitIdle()
	slot0, err := servers[3].Client(t).HGet(bg(), "slots", "0").Result()
	require.NoError(t, err)
	for _, p := range held {
		if len(slot0) > len(p.Token()) && slot0[:len(p.Token())] == p.Token() {
			require.NoError(t, p.Unlock(bg()))
		}
	}
	c.WaitIdle()
	for i, s := range servers {
		slots, err := s.Client(t).HKeys(bg(), "slots").Result()
		require.NoError(t, err)
		require.Equal(t, []string{"1"}, slots, "node %d holds the permit in slot 1 alone", i)
	}

	restartEmpty(t, servers[:3])
	fresh := openPools(t, servers)
	decl, err := redlock.DeclareFresh(bg(), fresh)
	requireRefusedOn(t, servers, decl, err, 3, 4)
}

// A plain lock held on nodes 0-2 alone (its Client's requests to nodes 3
// and 4 reach no server), while nodes 3 and 4 keep the lease ceiling an
// earlier lock raised there; nodes 0-2 restarted empty. Nodes 3 and 4
// hold no key of the lock: their ceilings are the only evidence left that
// it may be valid. Once declared, a new Client would take the key at once.
func TestRealDeclareFreshRefusesWhileAPeerKeepsACeiling(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	c := newClient(t, pools)
	earlier, err := c.TryLock(bg(), "earlier", leaseTTL)
	require.NoError(t, err)
	require.NoError(t, earlier.Unlock(bg()))
	c.WaitIdle()

	gone := redistest.StartN(t, 2, redistest.NoPersistence)
	for _, s := range gone {
		s.Kill()
	}
	partial := append(pools[:3:3], openPools(t, gone)...)
	a := newClient(t, partial)
	la, err := a.TryLock(bg(), "job", leaseTTL)
	require.NoError(t, err)
	a.WaitIdle()
	require.Equal(t, 3, realHolders(t, servers, "job", la.Token()), "the lock on nodes 0-2")
	for i, s := range servers[3:] {
		keys, err := s.Client(t).Keys(bg(), "*").Result()
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{pool.FreshStartKey, keyspace.Ceiling, keyspace.MaxTTL}, keys, "node %d", 3+i)
	}

	restartEmpty(t, servers[:3])
	fresh := openPools(t, servers)
	decl, err := redlock.DeclareFresh(bg(), fresh)
	requireRefusedOn(t, servers, decl, err, 3, 4)

	// Undeclared, nodes 0-2 sit out their quarantine: a new Client does not
	// take the key while A's lock may be valid.
	b := newClient(t, openPools(t, servers))
	_, err = b.TryLock(bg(), "job", leaseTTL)
	require.Error(t, err, "a second holder while A's lock is valid until %v", la.Until())
	b.WaitIdle()
}

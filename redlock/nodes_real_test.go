package redlock_test

import (
	"crypto/rand"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// openPools returns a FromURL Pool per server, closed when t ends.
func openPools(t *testing.T, servers []*redistest.Server) []pool.Pool {
	t.Helper()
	pools := make([]pool.Pool, len(servers))
	for i, s := range servers {
		p, err := pool.FromURL(s.URL())
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		pools[i] = p
	}
	return pools
}

// A deployment's first day: two stock nodes and one that persists every
// write. CheckNodes judges them as the Client does (the stock nodes
// quarantined, the Client's TryLock unavailable, Status's Quarantined set);
// after DeclareFresh both count, for CheckNodes at once and for a Client
// whose pools connect anew.
func TestRealCheckNodesAndDeclareFresh(t *testing.T) {
	parallel(t)
	servers := append(redistest.StartNUndeclared(t, 2, redistest.NoPersistence),
		redistest.StartNUndeclared(t, 1, redistest.AOFAlways)...)
	pools := openPools(t, servers)

	r, err := redlock.CheckNodes(bg(), pools)
	require.NoError(t, err)
	require.Len(t, r.Nodes, 3)
	assert.Equal(t, redlock.DefaultQuarantine, r.Quarantine)
	assert.Equal(t, 2, r.Needed)
	assert.Equal(t, 1, r.Counting)
	assert.False(t, r.OK())
	for i, n := range r.Nodes {
		require.NoError(t, n.Err, "node %d", i)
		assert.Equal(t, servers[i].Addr(), n.Addr)
		assert.NotEmpty(t, n.Version)
		assert.NotEmpty(t, n.RunID)
		assert.GreaterOrEqual(t, n.Uptime, time.Duration(0))
		assert.Equal(t, "noeviction", n.MaxmemoryPolicy)
		assert.Less(t, n.ClockOffset.Abs(), time.Minute, "the same host's clock")
		assert.False(t, n.FreshStart)
		assert.False(t, n.Cluster)
	}
	for _, n := range r.Nodes[:2] {
		assert.Equal(t, pool.PersistencePartial, n.Persistence)
		assert.Greater(t, n.Quarantined, redlock.DefaultQuarantine-20*time.Second, "the nodes started a moment ago")
		assert.False(t, n.Counts)
	}
	assert.Equal(t, pool.PersistenceAlways, r.Nodes[2].Persistence)
	assert.Zero(t, r.Nodes[2].Quarantined)
	assert.True(t, r.Nodes[2].Counts)

	// The Client agrees.
	c := newClient(t, pools, redlock.WithNodeTimeout(time.Second))
	_, err = c.TryLock(bg(), "first-day", time.Second)
	require.ErrorIs(t, err, redlock.ErrNodeQuarantined)
	assert.True(t, redlock.IsUnavailable(err))
	// The refused attempt's cleanup runs after its decision: once it has
	// removed the key it set on the quarantined nodes, they hold no key of
	// the library's, which DeclareFresh below requires (1 run in 10 looked
	// before the cleanup landed).
	c.WaitIdle()
	st, err := c.Status(bg(), "first-day")
	require.NoError(t, err)
	for i, n := range st.Nodes {
		assert.Equal(t, r.Nodes[i].Quarantined > 0, n.Quarantined > 0, "node %d", i)
		assert.InDelta(t, r.Nodes[i].Quarantined, n.Quarantined, float64(time.Minute), "node %d", i)
	}

	// Off: every node counts.
	r, err = redlock.CheckNodes(bg(), pools, redlock.WithQuarantine(0))
	require.NoError(t, err)
	assert.True(t, r.OK())
	assert.Equal(t, 3, r.Counting)

	// The refused attempt raised the nodes' lease ceilings (for three TTLs,
	// acquire.lua), and DeclareFresh refuses while one lives: for all it
	// can tell, a lease the ceiling covers may still be valid.
	redistest.WaitFor(t, 30*time.Second, "the refused attempt's lease ceilings to expire", func() (bool, string) {
		for i, s := range servers {
			if ttl := s.Client(t).PTTL(bg(), "redlock:ceiling").Val(); ttl != -2*time.Nanosecond {
				return false, fmt.Sprintf("node %d's ceiling expires in %v", i, ttl)
			}
		}
		return true, ""
	})
	decl, err := redlock.DeclareFresh(bg(), pools)
	require.NoError(t, err)
	require.Len(t, decl, 3)
	for i, d := range decl {
		assert.Equal(t, i, d.Node)
		assert.Equal(t, servers[i].Client(t).Get(bg(), pool.FreshStartKey).Val(), d.RunID)
	}
	r, err = redlock.CheckNodes(bg(), pools)
	require.NoError(t, err)
	assert.Equal(t, 3, r.Counting)
	for _, n := range r.Nodes {
		assert.True(t, n.FreshStart)
	}
	// A Client whose pools connect after the declaration takes the lock.
	fresh := newClient(t, openPools(t, servers), redlock.WithNodeTimeout(time.Second))
	l, err := fresh.TryLock(bg(), "first-day", time.Minute)
	require.NoError(t, err)
	fresh.WaitIdle()

	// Now the deployment holds a lock: declaring again is refused on every
	// node that has it, and no declaration changes.
	_, err = redlock.DeclareFresh(bg(), pools)
	require.ErrorIs(t, err, redlock.ErrNotFresh)
	var ne *redlock.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Contains(t, err.Error(), `"first-day"`)
	require.NoError(t, l.Unlock(bg()))
}

// nodeErrorsIn returns every *redlock.NodeError in err's tree: DeclareFresh
// joins one per failed node, and errors.As finds only the first.
func nodeErrorsIn(err error) []*redlock.NodeError {
	switch e := err.(type) {
	case *redlock.NodeError:
		return []*redlock.NodeError{e}
	case interface{ Unwrap() []error }:
		var out []*redlock.NodeError
		for _, inner := range e.Unwrap() {
			out = append(out, nodeErrorsIn(inner)...)
		}
		return out
	case interface{ Unwrap() error }:
		return nodeErrorsIn(e.Unwrap())
	}
	return nil
}

// DeclareFresh finds the library's keys by name and by value (a lease's
// value of every kind, with its TTL), and ignores the application's.
func TestRealDeclareFreshFindsLibraryKeys(t *testing.T) {
	parallel(t)
	servers := redistest.StartNUndeclared(t, 3, redistest.NoPersistence)
	pools := openPools(t, servers)
	c := servers[2].Client(t)
	permits := func(k, slot string) error {
		if err := c.HSet(bg(), k, slot, rand.Text()+" 99").Err(); err != nil {
			return err
		}
		return c.PExpire(bg(), k, time.Minute).Err()
	}
	for _, tc := range []struct {
		name, key string
		set       func(key string) error
	}{
		{"lock", "job", func(k string) error { return c.Set(bg(), k, rand.Text(), time.Minute).Err() }},
		{"permits", "pool", func(k string) error { return permits(k, "0") }},
		{"a permit in another slot", "pool", func(k string) error { return permits(k, "3") }},
		{"multi-lock", "batch", func(k string) error { return c.Set(bg(), k, "m:"+rand.Text(), time.Minute).Err() }},
		{"owner", "job", func(k string) error { return c.Set(bg(), k, "o:worker-1", time.Minute).Err() }},
		{"readers marker", "doc", func(k string) error { return c.Set(bg(), k, "r:readers", time.Minute).Err() }},
		{"readers", readersKey("doc"), func(k string) error { return c.ZAdd(bg(), k, redis.Z{Score: 1, Member: rand.Text()}).Err() }},
		{"fence", redlock.FenceKey("job"), func(k string) error { return c.Set(bg(), k, "3", 0).Err() }},
		{"queue", queueKey("job"), func(k string) error { return c.ZAdd(bg(), k, redis.Z{Score: 1, Member: rand.Text()}).Err() }},
		{"marker", "redlock:reign{0}", func(k string) error { return c.Set(bg(), k, "x", 0).Err() }},
		{"earlier declaration", pool.FreshStartKey, func(k string) error { return c.Set(bg(), k, "an-earlier-run", 0).Err() }},
		{"election", electionKey(t, "scheduler"), func(k string) error { return c.Set(bg(), k, rand.Text(), 0).Err() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, c.FlushAll(bg()).Err())
			require.NoError(t, c.Set(bg(), "session:1", "ABCDEFGHIJKLMNOPQRSTUVWXY", 0).Err()) // 25 characters: not a token
			require.NoError(t, tc.set(tc.key))
			decl, err := redlock.DeclareFresh(bg(), pools)
			require.ErrorIs(t, err, redlock.ErrNotFresh)
			assert.Nil(t, decl)
			// Only node 2 holds keys. Another node may fail for want of an
			// answer on a loaded machine; it must not be called not fresh.
			var notFresh []int
			for _, ne := range nodeErrorsIn(err) {
				if errors.Is(ne, redlock.ErrNotFresh) {
					notFresh = append(notFresh, ne.Node)
				} else {
					t.Logf("node %d failed otherwise: %v", ne.Node, ne)
				}
			}
			assert.Equal(t, []int{2}, notFresh, "the nodes called not fresh, in %v", err)
			assert.Contains(t, err.Error(), `"`+tc.key+`"`)
			assert.NotContains(t, err.Error(), "session:1")
			for _, s := range servers[:2] {
				assert.Zero(t, s.Client(t).Exists(bg(), pool.FreshStartKey).Val())
			}
		})
	}
	require.NoError(t, c.FlushAll(bg()).Err())
	require.NoError(t, c.Set(bg(), "session:1", "hello", 0).Err())
	require.NoError(t, c.Set(bg(), "cached", rand.Text(), 0).Err()) // a token's shape, no TTL: no lease's
	require.NoError(t, c.Set(bg(), "job:fence", "3", 0).Err())      // the application's, whatever its ending
	require.NoError(t, c.Set(bg(), "election:scheduler", "x", 0).Err())
	_, err := redlock.DeclareFresh(bg(), pools)
	require.NoError(t, err, "the application's keys are no obstacle")
}

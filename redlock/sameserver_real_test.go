package redlock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// oneServerTwice starts two servers, P and Q, and returns pools for
// 127.0.0.1:P, localhost:P and 127.0.0.1:Q, each connected once (so each
// has learned its server's run), with P, Q and the second address of P.
func oneServerTwice(t *testing.T) (p, q *redistest.Server, alias string, pools []pool.Pool) {
	t.Helper()
	servers := redistest.StartN(t, 2, redistest.NoPersistence)
	p, q = servers[0], servers[1]
	alias = "localhost:" + strconv.Itoa(p.Port)
	for _, u := range []string{p.URL(), "redis://" + alias, q.URL()} {
		pl, err := pool.FromURL(u)
		require.NoError(t, err)
		t.Cleanup(func() { _ = pl.Close() })
		pools = append(pools, pl)
	}
	warm(t, pools)
	return p, q, alias, pools
}

// runID returns the run_id of server s.
func runID(t *testing.T, s *redistest.Server) string {
	t.Helper()
	r, err := redlock.CheckNodes(bg(), []pool.Pool{mustPool(t, s.URL())})
	require.NoError(t, err)
	require.NotEmpty(t, r.Nodes[0].RunID)
	return r.Nodes[0].RunID
}

func mustPool(t *testing.T, url string) pool.Pool {
	t.Helper()
	p, err := pool.FromURL(url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// One server under two addresses is one vote at most: with pools for
// 127.0.0.1:P, localhost:P and a second server Q, Q paused, no kind of
// acquisition gets a majority out of P's two addresses. Each fails as
// unavailable (a node fault, not contention), with ErrNodeSameServer and
// an error that names both addresses of P and its run, and the Client
// reports the misconfiguration once per node (NodeSameServer).
func TestRealOneServerUnderTwoAddressesIsNotAMajority(t *testing.T) {
	defer parallel(t).idle() // its cleanups wait out the calls to the paused node
	p, q, alias, pools := oneServerTwice(t)
	run := runID(t, p)
	rec := &recorder{}
	c := newClient(t, pools, redlock.WithObserver(rec))
	q.Pause()
	t.Cleanup(q.Resume) // before c's Close, which waits for the calls to Q

	tries := []struct {
		name string
		try  func(ctx context.Context) error
	}{
		{"TryLock", func(ctx context.Context) error { _, err := c.TryLock(ctx, "same:lock", 10*time.Second); return err }},
		{"TryRLock", func(ctx context.Context) error { _, err := c.TryRLock(ctx, "same:read", 10*time.Second); return err }},
		{"TryAcquirePermit", func(ctx context.Context) error {
			_, err := c.TryAcquirePermit(ctx, "same:permit", 2, 10*time.Second)
			return err
		}},
		{"TryLockAll", func(ctx context.Context) error {
			_, err := c.TryLockAll(ctx, []string{"same:a", "same:b"}, 10*time.Second)
			return err
		}},
		{"Campaign", func(ctx context.Context) error {
			_, err := c.Campaign(ctx, "same:election", "v", 10*time.Second)
			return err
		}},
	}
	for _, tc := range tries {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(bg(), 5*time.Second)
			defer cancel()
			err := tc.try(ctx)
			require.ErrorIs(t, err, redlock.ErrNotObtained, "one server under two addresses gave a majority")
			require.ErrorIs(t, err, redlock.ErrNodeSameServer)
			assert.True(t, redlock.IsUnavailable(err), "a misconfiguration is a node fault, not contention: %v", err)
			for _, want := range []string{p.Addr(), alias, run} {
				assert.Contains(t, err.Error(), want)
			}
		})
	}

	var reports []redlock.Event
	for _, e := range rec.snapshot() {
		if e.Kind == redlock.NodeSameServer {
			reports = append(reports, e)
		}
	}
	require.Len(t, reports, 2, "one report per address of P, once")
	assert.ElementsMatch(t, []string{p.Addr(), alias}, []string{reports[0].Addr, reports[1].Addr})
	require.ErrorIs(t, reports[0].Err, redlock.ErrNodeSameServer)
	states := c.NodeStates()
	for i := range 2 {
		assert.ErrorIs(t, states[i].Err, redlock.ErrNodeSameServer, "node %d", i)
	}
}

// CheckNodes, and so `redlock nodes check`, reads the same run behind two
// addresses and counts neither.
func TestRealCheckNodesCountsOneServerUnderTwoAddressesForNeither(t *testing.T) {
	parallel(t)
	p, _, alias, pools := oneServerTwice(t)
	r, err := redlock.CheckNodes(bg(), pools)
	require.NoError(t, err)
	assert.Equal(t, 1, r.Counting, "only Q counts")
	assert.False(t, r.OK())
	assert.Equal(t, []int{1}, r.Nodes[0].SameServer, "%s is %s", p.Addr(), alias)
	assert.Equal(t, []int{0}, r.Nodes[1].SameServer)
	assert.Empty(t, r.Nodes[2].SameServer)
	assert.False(t, r.Nodes[0].Counts)
	assert.False(t, r.Nodes[1].Counts)
	assert.True(t, r.Nodes[2].Counts)
}

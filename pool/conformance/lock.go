package conformance

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// newClient returns a lock Client over pools, closed when t ends, with a node
// timeout generous enough for a loaded machine.
func newClient(t *testing.T, pools []pool.Pool, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	opts = append([]redlock.Option{redlock.WithNodeTimeout(time.Second)}, opts...)
	c, err := redlock.New(pools, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// openAll returns one Pool per URL.
func (s *suite) openAll(t *testing.T, urls []string, cfg *tls.Config) []pool.Pool {
	t.Helper()
	pools := make([]pool.Pool, len(urls))
	for i, u := range urls {
		pools[i] = s.open(t, u, cfg)
	}
	return pools
}

// lockNodes is what testRedlock's subtests share: five real nodes, the
// adapter's Pool on each, and two lock Clients over them.
type lockNodes struct {
	servers []*redistest.Server
	pools   []pool.Pool
	a, b    *redlock.Client
}

// lockNodes starts the nodes, stopped when t ends.
func (s *suite) lockNodes(t *testing.T) *lockNodes {
	servers := redistest.StartN(t, 5, redistest.NoPersistence)
	urls := make([]string, len(servers))
	for i, srv := range servers {
		urls[i] = srv.URL()
	}
	pools := s.openAll(t, urls, nil)
	return &lockNodes{servers: servers, pools: pools, a: newClient(t, pools), b: newClient(t, pools)}
}

// holders counts the nodes where key holds token with a TTL.
func (f *lockNodes) holders(t *testing.T, c context.Context, key, token string) int {
	n := 0
	for _, srv := range f.servers {
		rc := srv.Client(t)
		if v, err := rc.Get(c, key).Result(); err == nil && v == token {
			if pttl, err := rc.PTTL(c, key).Result(); err == nil && pttl > 0 {
				n++
			}
		}
	}
	return n
}

func (s *suite) testRedlock(t *testing.T) {
	f := s.lockNodes(t)
	c, a, b := ctx(t), f.a, f.b

	t.Run("LockUnlock", func(t *testing.T) {
		l, err := a.TryLock(c, "res", time.Minute)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, f.holders(t, c, "res", l.Token()), a.Quorum())
		require.NoError(t, l.Unlock(c))
		assert.Eventually(t, func() bool { return f.holders(t, c, "res", l.Token()) == 0 },
			5*time.Second, 10*time.Millisecond, "Unlock leaves no copy behind")
	})

	t.Run("SecondOwnerRefused", func(t *testing.T) {
		l, err := a.TryLock(c, "res", time.Minute)
		require.NoError(t, err)
		_, err = b.TryLock(c, "res", time.Minute)
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, redlock.ErrTaken)
		require.NoError(t, l.Unlock(c))
		// Unlock returns at the majority, and b's refused attempt is cleaned
		// up in the background: the key is free for b once both are done.
		var lb *redlock.Lock
		require.Eventually(t, func() bool {
			lb, err = b.TryLock(c, "res", time.Minute)
			return err == nil
		}, 5*time.Second, 20*time.Millisecond, "free again after Unlock")
		require.NoError(t, lb.Unlock(c))
	})

	t.Run("Extend", func(t *testing.T) {
		l, err := a.TryLock(c, "ext", 2*time.Second)
		require.NoError(t, err)
		before := l.Until()
		require.NoError(t, l.Extend(c, time.Minute))
		assert.True(t, l.Until().After(before))
		require.NoError(t, l.Unlock(c))
		require.ErrorIs(t, l.Extend(c, time.Minute), redlock.ErrNotHeld, "an unlocked lock is not extended")
	})

	t.Run("Fencing", func(t *testing.T) {
		l1, err := a.TryLock(c, "fenced", time.Minute, redlock.WithFencing())
		require.NoError(t, err)
		require.NoError(t, l1.Unlock(c))
		var l2 *redlock.Lock
		require.Eventually(t, func() bool { // Unlock returns at the majority
			l2, err = b.TryLock(c, "fenced", time.Minute, redlock.WithFencing())
			return err == nil
		}, 5*time.Second, 20*time.Millisecond, "free again after Unlock")
		require.NoError(t, l2.Unlock(c))
		assert.Positive(t, l1.Fence())
		assert.Greater(t, l2.Fence(), l1.Fence(), "each fenced acquisition gets a higher fence")
	})

	t.Run("MinorityDown", func(t *testing.T) { f.minorityDown(t, c) })
}

// minorityDown kills two of the five nodes, then a third: the lock works
// with the majority left, and refuses without one. It runs last.
func (f *lockNodes) minorityDown(t *testing.T, c context.Context) {
	a, b, servers, pools := f.a, f.b, f.servers, f.pools
	servers[0].Kill()
	servers[1].Kill()
	l, err := a.TryLock(c, "down", time.Minute)
	require.NoError(t, err, "2 of 5 nodes down: the majority still locks")
	require.NoError(t, l.Extend(c, time.Minute))
	_, err = b.TryLock(c, "down", time.Minute)
	require.ErrorIs(t, err, redlock.ErrTaken)
	require.NoError(t, l.Unlock(c))

	servers[2].Kill()
	_, err = a.TryLock(c, "down", time.Minute)
	require.ErrorIs(t, err, redlock.ErrNotObtained, "3 of 5 down: no majority")
	var ne *redlock.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Contains(t, []string{pools[0].Addr(), pools[1].Addr(), pools[2].Addr()}, ne.Addr)
}

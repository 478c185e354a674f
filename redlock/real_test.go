package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// These tests run on real redis-server processes (see internal/redistest).

// realNodes starts n redis-servers and returns them with one pool each.
func realNodes(t testing.TB, n int) ([]*redistest.Server, []pool.Pool) {
	t.Helper()
	servers := redistest.StartN(t, n, redistest.NoPersistence)
	pools := make([]pool.Pool, n)
	for i, s := range servers {
		p, err := pool.FromURL(s.URL())
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		pools[i] = p
	}
	warm(t, pools)
	return servers, pools
}

// rewarm reconnects pools whose servers restarted: the first call on a
// connection the restart broke fails (the pools make no hidden retries),
// and the next dials again and reads the new run's identity. So the test's
// next attempt is judged on the restarted nodes' answers, not cut by the
// grace while they redial.
func rewarm(t testing.TB, pools []pool.Pool) {
	t.Helper()
	for i, p := range pools {
		var err error
		for range 5 {
			ctx, cancel := context.WithTimeout(bg(), 2*time.Second)
			_, err = p.Eval(ctx, warmScript, nil)
			cancel()
			if err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("reconnecting to node %d (%s): %v", i, p.Addr(), err)
		}
	}
}

// warmScript is a script that touches nothing.
var warmScript = pool.NewScript("return 1")

// warm opens a connection to every node (its dial and the pool's identity
// handshake), so that a test's first call, often under a node timeout of
// 100ms that the test chose for what it checks, does not also pay the
// dial while the package's other tests run beside it. A Redis Cluster
// node's pool loads its slot map and dials every shard master
// (pool.Masters).
func warm(t testing.TB, pools []pool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
	defer cancel()
	for i, p := range pools {
		var err error
		cp, cl := p.(pool.Cluster)
		if ms, ok := p.(pool.Masters); ok && cl && cp.IsCluster() {
			err = ms.EachMaster(ctx, func(ctx context.Context, m pool.Pool) error {
				_, err := m.Eval(ctx, warmScript, nil)
				return err
			})
		} else {
			_, err = p.Eval(ctx, warmScript, nil)
		}
		if err != nil {
			t.Fatalf("warming node %d (%s): %v", i, p.Addr(), err)
		}
	}
}

// retryUnanswered runs try, an acquisition by c, and tries again, up to
// attempts tries in all, when it was refused only for want of answers
// within the node timeout (ErrNotObtained with ErrNodeTimeout). Before each
// new try it waits for c's calls, the refused try's cleanup among them.
// Any other refusal, or the last, fails t. It is for an acquisition a test
// needs, not one it checks: a loaded machine (two CPU hogs and two race
// builds of this package at once) has stalled every node's answer past
// newClient's 1s node timeout, on four nodes of five at once.
func retryUnanswered(t testing.TB, c *redlock.Client, what string, attempts int, try func() (*redlock.Lock, error)) *redlock.Lock {
	t.Helper()
	for attempt := 1; ; attempt++ {
		l, err := try()
		if err == nil {
			return l
		}
		if attempt >= attempts || !errors.Is(err, redlock.ErrNotObtained) || !errors.Is(err, redlock.ErrNodeTimeout) {
			require.NoError(t, err, "%s (try %d of %d)", what, attempt, attempts)
		}
		t.Logf("%s: try %d: %v (trying again)", what, attempt, err)
		c.WaitIdle()
	}
}

// usedUpValidity reports whether err is an acquisition's refusal for
// validity used up: a majority agreed, too late to leave any validity (a
// stall of the machine longer than the TTL), not a refusal by the nodes.
func usedUpValidity(err error) bool {
	var qe *redlock.QuorumError
	return errors.As(err, &qe) && errors.Is(err, redlock.ErrNotObtained) && strings.HasPrefix(qe.Reason, "validity used up")
}

// realHolders counts the servers where key holds value, and checks that every
// copy has a TTL. PTTL answers -1 for a key without one, and -2 (in
// go-redis, -2ns) for a key gone since the GET: it expired in between, and
// is not counted; 0 is a key in its last millisecond (seen under load with
// a 500ms TTL), which has a TTL.
func realHolders(t *testing.T, servers []*redistest.Server, key, value string) int {
	t.Helper()
	n := 0
	for _, s := range servers {
		c := s.Client(t)
		v, err := c.Get(bg(), key).Result()
		if err != nil || v != value {
			continue
		}
		ttl, err := c.PTTL(bg(), key).Result()
		require.NoError(t, err)
		if ttl == -2 {
			continue
		}
		require.GreaterOrEqual(t, ttl, time.Duration(0), "every lock key carries a TTL: PTTL of %q on %s is %v", key, s.Addr(), ttl)
		n++
	}
	return n
}

func TestRealLockUnlockAndSecondClientRefused(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	a := newClient(t, pools)
	b := newClient(t, pools)

	l, err := a.TryLock(bg(), "res", 10*time.Second)
	require.NoError(t, err)
	a.WaitIdle()
	assert.Equal(t, 5, realHolders(t, servers, "res", l.Token()))

	_, err = b.TryLock(bg(), "res", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrTaken)
	b.WaitIdle()
	assert.Equal(t, 5, realHolders(t, servers, "res", l.Token()), "a refused client leaves the holder's keys alone")

	require.NoError(t, l.Unlock(bg()))
	a.WaitIdle()
	assert.Zero(t, realHolders(t, servers, "res", l.Token()))
	lb, err := b.TryLock(bg(), "res", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, lb.Unlock(bg()))
}

func TestRealMinorityDown(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	servers[0].Kill()
	servers[1].Kill()
	c := newClient(t, pools)
	l, err := c.TryLock(bg(), "res", 10*time.Second)
	require.NoError(t, err, "2 of 5 nodes down: the majority still locks")
	require.NoError(t, l.Extend(bg(), 10*time.Second))
	require.NoError(t, l.Unlock(bg()))
}

func TestRealMajorityDownLeavesNothing(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	for _, s := range servers[:3] {
		s.Kill()
	}
	c := newClient(t, pools)
	_, err := c.TryLock(bg(), "res", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	var ne *redlock.NodeError
	require.ErrorAs(t, err, &ne)
	c.WaitIdle()
	for _, s := range servers[3:] {
		n, err := s.Client(t).Exists(bg(), "res").Result()
		require.NoError(t, err)
		assert.Zero(t, n, "a failed attempt leaves nothing on live nodes")
	}
}

func TestRealPausedNodeDoesNotSlowLockOrUnlock(t *testing.T) {
	servers, pools := realNodes(t, 5)
	const nodeTimeout = 100 * time.Millisecond
	c, err := redlock.New(pools, redlock.WithNodeTimeout(nodeTimeout))
	require.NoError(t, err)
	defer c.Close() // after Resume (deferred later, runs first)

	servers[2].Pause()
	defer servers[2].Resume()

	// The paused node never answers. A call that waited for it would block
	// until the test times out; ours decide at the majority.
	for range 5 {
		l, err := c.TryLock(bg(), "res", 10*time.Second)
		require.NoError(t, err)
		require.NoError(t, l.Extend(bg(), 10*time.Second))
		require.NoError(t, l.Unlock(bg()))
	}
}

func TestRealMutualExclusion(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 5)
	clients := []*redlock.Client{newClient(t, pools), newClient(t, pools), newClient(t, pools)}
	var (
		inside  atomic.Int32
		overlap atomic.Int32
		counter int // guarded by the distributed lock only
		wg      sync.WaitGroup
	)
	const workers, rounds = 12, 10
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[w%len(clients)]
			for range rounds {
				ctx, cancel := context.WithTimeout(bg(), 30*time.Second)
				l, err := c.Lock(ctx, "counter", 10*time.Second)
				cancel()
				if !assert.NoError(t, err) {
					return
				}
				if inside.Add(1) > 1 {
					overlap.Add(1)
				}
				v := counter // a read-modify-write that loses updates without the lock
				time.Sleep(time.Millisecond)
				counter = v + 1
				inside.Add(-1)
				// With 36 Lock loops on two race builds and two CPU hogs,
				// a node once answered the release past the 1s node
				// timeout; the release still runs, and the next Lock
				// needs only a majority. What counts is exclusion.
				releasedOrLate(t, l.Unlock(bg()), "unlock")
			}
		}()
	}
	wg.Wait()
	assert.Zero(t, overlap.Load(), "two holders at once")
	assert.Equal(t, workers*rounds, counter, "lost updates")
}

func TestRealExtendBeforeAndAfterExpiry(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	// 250ms and TTLs of 2s and 1s: the Extend before expiry needs three of
	// the five nodes within the node timeout and the validity, and at 100ms
	// (a 300ms TTL) four missed it on a loaded machine.
	c := newClient(t, pools, redlock.WithNodeTimeout(250*time.Millisecond))
	l, err := c.TryLock(bg(), "res", 2*time.Second)
	require.NoError(t, err)
	before := l.Until()
	require.NoError(t, l.Extend(bg(), 5*time.Second))
	assert.True(t, l.Until().After(before))
	c.WaitIdle()
	assert.Equal(t, 5, realHolders(t, servers, "res", l.Token()))

	short, err := c.TryLock(bg(), "short", time.Second)
	require.NoError(t, err)
	time.Sleep(time.Until(short.Until()) + 150*time.Millisecond) // past validity and TTL
	require.ErrorIs(t, short.Extend(bg(), 5*time.Second), redlock.ErrNotHeld)
	c.WaitIdle()
	assert.Zero(t, realHolders(t, servers, "short", short.Token()), "an expired lock is never re-created")
}

func TestRealNoScriptAfterRestart(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 3)
	c := newClient(t, pools)
	l, err := c.TryLock(bg(), "res", time.Minute)
	require.NoError(t, err)
	require.NoError(t, l.Extend(bg(), time.Minute)) // scripts now cached
	for _, s := range servers {
		require.NoError(t, s.Client(t).ScriptFlush(bg()).Err())
	}
	require.NoError(t, l.Extend(bg(), time.Minute), "NOSCRIPT falls back to EVAL")
	require.NoError(t, l.Unlock(bg()))
}

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }

func TestRealNodeTimeoutIsErrNodeTimeout(t *testing.T) {
	servers, pools := realNodes(t, 3)
	c, err := redlock.New(pools, redlock.WithNodeTimeout(100*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	warm, err := c.TryLock(bg(), "warm", time.Minute) // open connections first
	require.NoError(t, err)
	require.NoError(t, warm.Unlock(bg()))
	for _, s := range servers[:2] {
		s.Pause()
		defer s.Resume()
	}
	_, err = c.TryLock(bg(), "res", time.Minute)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrNodeTimeout, "a node that did not answer in time")
	require.NotErrorIs(t, err, context.DeadlineExceeded, "the caller's context did not end")
	var ne *redlock.NodeError
	require.ErrorAs(t, err, &ne)
	require.ErrorIs(t, ne, redlock.ErrNodeTimeout)
}

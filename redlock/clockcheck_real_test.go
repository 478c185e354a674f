package redlock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// realPools opens a pool per server, closed when t ends.
func realPools(t *testing.T, servers []*redistest.Server) []pool.Pool {
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

// fastNodeClock sets up the hazard a fast node clock makes: client A holds
// "res" on nodes 0 and 1 (node 2 refused it: another key was there, which
// expires soon after), then node 0's clock starts to run four times as fast,
// and A's key there expires long before A's validity ends. Node 0's clock is
// really fast: redis-server runs under libfaketime (redistest's fake clock),
// so it expires keys, answers TIME and counts its uptime by it. It returns
// A's lock, once node 0 has dropped A's key and node 2 is free.
func fastNodeClock(t *testing.T, servers []*redistest.Server, pools []pool.Pool) *redlock.Lock {
	t.Helper()
	require.NoError(t, servers[2].Client(t).Set(bg(), "res", "other", 1500*time.Millisecond).Err())
	a := newClient(t, pools)
	la, err := a.TryLock(bg(), "res", 8*time.Second)
	require.NoError(t, err)
	require.NoError(t, servers[0].SetClock(0, 4))
	for _, s := range []*redistest.Server{servers[0], servers[2]} {
		require.Eventually(t, func() bool { return s.Client(t).Exists(bg(), "res").Val() == 0 },
			5*time.Second, 10*time.Millisecond, "node %s: the key is still there", s.Addr())
	}
	require.True(t, time.Now().Before(la.Until()), "A's lock is still valid")
	return la
}

// Node 0's clock runs four times as fast as ours and drops A's key early.
// Client B's clock check reports it, with the measured rate, and does not
// count node 0: B cannot build a majority on node 0 and node 2 while A's lock
// is valid. TestRealFastNodeClockWithoutCheck is the same without the check.
func TestRealClockCheckFindsAFastClock(t *testing.T) {
	servers := []*redistest.Server{redistest.StartWithFakeClock(t, redistest.NoPersistence),
		redistest.Start(t, redistest.NoPersistence), redistest.Start(t, redistest.NoPersistence)}
	pools := realPools(t, servers)
	faults := make(chan redlock.Event, 10)
	b := newClient(t, pools, redlock.WithClockCheck(50*time.Millisecond), redlock.WithQuarantine(time.Minute),
		redlock.WithObserver(redlock.ObserverFunc(func(_ context.Context, e redlock.Event) {
			if e.Kind == redlock.NodeClockFault {
				faults <- e
			}
		})))
	la := fastNodeClock(t, servers, pools)

	var e redlock.Event
	select {
	case e = <-faults:
	case <-time.After(10 * time.Second):
		t.Fatal("the fast clock was not reported")
	}
	var ne *redlock.NodeError
	require.ErrorAs(t, e.Err, &ne)
	assert.Equal(t, 0, ne.Node)
	require.ErrorIs(t, e.Err, redlock.ErrNodeClock)
	var rate float64
	_, err := fmt.Sscanf(e.Err.Error()[strings.Index(e.Err.Error(), "(rate "):], "(rate %f", &rate)
	require.NoError(t, err, "the event carries the measured rate: %v", e.Err)
	assert.Greater(t, rate, 1.5, "node 0's clock runs at 4 times our rate: %v", e.Err)
	t.Log(e.Err)

	_, err = b.TryLock(bg(), "res", 8*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrNodeClock, "node 0 does not count")
	require.True(t, time.Now().Before(la.Until()), "refused while A's lock is valid")
	// A's lock is left on node 1 alone: node 0's clock dropped its key.
	require.ErrorIs(t, la.Unlock(bg()), redlock.ErrNotHeld)
}

// The hazard TestRealClockCheckFindsAFastClock guards against: without the
// clock check, B builds a majority on node 0, whose fast clock dropped A's
// key, and node 2, while A's lock is still valid.
func TestRealFastNodeClockWithoutCheck(t *testing.T) {
	servers := []*redistest.Server{redistest.StartWithFakeClock(t, redistest.NoPersistence),
		redistest.Start(t, redistest.NoPersistence), redistest.Start(t, redistest.NoPersistence)}
	pools := realPools(t, servers)
	b := newClient(t, pools)
	la := fastNodeClock(t, servers, pools)

	lb, err := b.TryLock(bg(), "res", 8*time.Second)
	require.NoError(t, err, "without the check B gets the lock A holds")
	now := time.Now()
	assert.True(t, now.Before(la.Until()) && now.Before(lb.Until()), "two valid holders")
}

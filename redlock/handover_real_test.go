package redlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/pooltest"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// counted wraps pools so that the SET NX calls made through them are
// counted.
func counted(pools []pool.Pool) ([]pool.Pool, *atomic.Int32) {
	var n atomic.Int32
	out := make([]pool.Pool, len(pools))
	for i, p := range pools {
		f := pooltest.Wrap(p)
		f.Before(func(op string) {
			if op == "setnx" && i == 0 {
				n.Add(1)
			}
		})
		out[i] = f
	}
	return out, &n
}

func TestRealUnlockHandsOverToParkedWaiter(t *testing.T) {
	servers, raw := realNodes(t, 3)
	pools, setnx := counted(raw)
	c := newClient(t, pools)
	l, err := c.TryLock(bg(), "res", time.Minute)
	require.NoError(t, err)
	first := lockAsync(c, "res", never)
	waitRealSubscribers(t, servers, "res", 1)
	second := lockAsync(c, "res", never)
	time.Sleep(20 * time.Millisecond) // queued behind the first
	before := settled(t, setnx)       // the first's refused attempts have landed
	require.NoError(t, l.Unlock(bg()))
	require.NoError(t, <-first)  // a plain attempt: it was not parked
	require.NoError(t, <-second) // parked behind the first, whose Unlock handed it the lock
	assert.Equal(t, int32(1), setnx.Load()-before,
		"one SET NX on node 0 for two acquisitions: the second was handed over")
}

func TestRealNoHandOverWhileAnotherClientWaits(t *testing.T) {
	servers, raw := realNodes(t, 3)
	pools, setnx := counted(raw)
	c := newClient(t, pools)
	l, err := c.TryLock(bg(), "res", time.Minute)
	require.NoError(t, err)
	// Another process waits for the key: subscribed to its release channel
	// on every node, as a Client with a waiter is.
	for _, s := range servers {
		sub := s.Client(t).Subscribe(bg(), redlock.ReleaseChannel("res"))
		t.Cleanup(func() { _ = sub.Close() })
	}
	waitRealSubscribers(t, servers, "res", 1)
	first := lockAsync(c, "res", never)
	waitRealSubscribers(t, servers, "res", 2)
	second := lockAsync(c, "res", never)
	time.Sleep(20 * time.Millisecond) // queued behind the first
	before := settled(t, setnx)       // the first's refused attempts have landed
	require.NoError(t, l.Unlock(bg()))
	require.NoError(t, <-first)
	require.NoError(t, <-second)
	assert.Equal(t, int32(2), setnx.Load()-before,
		"with another Client listening, the lock is released for all to try, not handed over")
}

// settled waits until n has not moved for 50ms, and returns it.
func settled(t *testing.T, n *atomic.Int32) int32 {
	t.Helper()
	last := int32(-1)
	require.Eventually(t, func() bool {
		v := n.Load()
		same := v == last
		last = v
		return same
	}, 10*time.Second, 50*time.Millisecond)
	return last
}

// waitRealSubscribers waits until every server counts n subscribers on
// key's release channel.
func waitRealSubscribers(t *testing.T, servers []*redistest.Server, key string, n int64) {
	t.Helper()
	ch := redlock.ReleaseChannel(key)
	require.Eventually(t, func() bool {
		for _, s := range servers {
			if s.Client(t).PubSubNumSub(context.Background(), ch).Val()[ch] != n {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond)
}

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

	before := setnx.Load()
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
	other := newClient(t, raw)
	l, err := c.TryLock(bg(), "res", time.Minute)
	require.NoError(t, err)
	remote := lockAsync(other, "res", never)
	waitRealSubscribers(t, servers, "res", 1)
	first := lockAsync(c, "res", never)
	waitRealSubscribers(t, servers, "res", 2)
	second := lockAsync(c, "res", never)
	time.Sleep(20 * time.Millisecond)

	before := setnx.Load()
	require.NoError(t, l.Unlock(bg()))
	for _, r := range []<-chan error{remote, first, second} {
		require.NoError(t, <-r)
	}
	assert.GreaterOrEqual(t, setnx.Load()-before, int32(2),
		"with another Client listening, the lock is released for all to try, not handed over")
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

package redlock_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/pooltest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// One test per classic mistake of Redis locks (see docs/safety.md), each on
// real redis-server processes, showing the library cannot make it.

// recordingNodes wraps real pools to record which operations reach them.
func recordingNodes(t *testing.T, pools []pool.Pool) ([]pool.Pool, func() []string) {
	var (
		mu  sync.Mutex
		ops []string
	)
	out := make([]pool.Pool, len(pools))
	for i, p := range pools {
		f := pooltest.Wrap(p)
		f.Before(func(op string) {
			mu.Lock()
			ops = append(ops, op)
			mu.Unlock()
		})
		out[i] = f
	}
	return out, func() []string {
		mu.Lock()
		defer mu.Unlock()
		got := ops
		ops = nil
		return got
	}
}

// Mistake: SETNX then EXPIRE as two commands, so a crash between them leaves a
// lock that never expires. The library acquires with one atomic call per
// node (a script that runs SET NX PX and raises the node's lease ceiling,
// scripts' acquire.lua): there is no window in which the key exists
// without a TTL.
func TestMistakeSetNXThenExpire(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 3)
	rec, ops := recordingNodes(t, pools)
	c := newClient(t, rec)
	l, err := c.TryLock(bg(), "res", time.Minute)
	require.NoError(t, err)
	c.WaitIdle()
	assert.Equal(t, []string{"eval", "eval", "eval"}, ops(), "one atomic script per node, nothing else")
	assert.Equal(t, 3, realHolders(t, servers, "res", l.Token()), "and every copy carries a TTL")
}

// Mistake: a timestamp as the value, recovered by GET + GETSET, so a loser
// overwrites the winner's expiry and anyone can release it. The library's
// value is a random token, and a loser never writes to a held key.
func TestMistakeTimestampValueAndGetSet(t *testing.T) {
	servers, pools := realNodes(t, 3)
	a := newClient(t, pools)
	b := newClient(t, pools)
	la, err := a.TryLock(bg(), "res", 30*time.Second)
	require.NoError(t, err)
	a.WaitIdle()
	_, err = time.Parse(time.RFC3339, la.Token())
	assert.Error(t, err, "the value is not a time")
	_, err = strconv.ParseInt(la.Token(), 10, 64)
	assert.Error(t, err, "the value is not a Unix time")
	before := map[int]time.Duration{}
	for i, s := range servers {
		before[i] = s.Client(t).PTTL(bg(), "res").Val()
	}

	for range 5 {
		_, err := b.TryLock(bg(), "res", time.Minute)
		require.ErrorIs(t, err, redlock.ErrNotObtained)
	}
	b.WaitIdle()
	for i, s := range servers {
		cl := s.Client(t)
		assert.Equal(t, la.Token(), cl.Get(bg(), "res").Val(), "the loser never overwrote the value")
		assert.LessOrEqual(t, cl.PTTL(bg(), "res").Val(), before[i], "nor extended the winner's expiry")
	}
}

// Mistake: DEL without an owner check releases a lock that expired and now
// belongs to someone else. The library's release compares the token first.
func TestMistakeDelWithoutOwnerCheck(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 3)
	a := newClient(t, pools)
	b := newClient(t, pools)
	ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
	defer cancel()
	la, err := a.Lock(ctx, "res", 300*time.Millisecond)
	require.NoError(t, err)
	time.Sleep(time.Until(la.Until()) + 400*time.Millisecond) // A's lease runs out while A is busy

	lb, err := b.TryLock(bg(), "res", time.Minute)
	require.NoError(t, err)
	b.WaitIdle()
	require.ErrorIs(t, la.Unlock(bg()), redlock.ErrNotHeld, "A learns it no longer held the lock")
	a.WaitIdle()
	assert.Equal(t, 3, realHolders(t, servers, "res", lb.Token()), "B's lock is untouched")
}

// Mistake: GET then DEL as two commands, releasing another owner's lock taken
// in the gap. The library releases with one compare-and-delete script per
// node, so there is no gap: each node runs it atomically.
func TestMistakeGetThenDel(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 3)
	rec, ops := recordingNodes(t, pools)
	a := newClient(t, rec)
	la, err := a.TryLock(bg(), "res", 30*time.Second)
	require.NoError(t, err)
	a.WaitIdle()
	ops()

	// Another owner takes the key on every node between A's acquisition and
	// A's release (as if A's lease had expired): A's release must not delete it.
	for _, s := range servers {
		require.NoError(t, s.Client(t).Set(bg(), "res", "other-owner", time.Minute).Err())
	}
	require.ErrorIs(t, la.Unlock(bg()), redlock.ErrNotHeld)
	a.WaitIdle()
	assert.Equal(t, []string{"eval", "eval", "eval"}, ops(), "one atomic script per node")
	assert.Equal(t, 3, realHolders(t, servers, "res", "other-owner"))
}

// Mistake: an expiry shorter than the work, so the lock silently passes to
// another client mid-work. The library reports validity (Until) and extends
// it; a holder that keeps extending is never overtaken.
func TestMistakeExpiryShorterThanWork(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 3)
	a := newClient(t, pools)
	b := newClient(t, pools)
	// The holder extends every 250ms, and a stall of the machine between
	// two extensions longer than the TTL loses the lock: with 300ms, and
	// again with 1s (two CPU hogs and two race builds of this package, the
	// extension came 360ms after the validity ended), so the TTL is 3s.
	const ttl = 3 * time.Second
	la, err := a.TryLock(bg(), "res", ttl)
	require.NoError(t, err)
	deadline := time.Now().Add(2 * ttl) // work twice as long as the TTL
	for time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		require.NoError(t, la.Extend(bg(), ttl))
		_, err := b.TryLock(bg(), "res", ttl)
		require.ErrorIs(t, err, redlock.ErrNotObtained, "nobody else gets a lock that is being extended")
	}
	require.NoError(t, la.Unlock(bg()))
}

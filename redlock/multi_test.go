package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

// Fast tests of multi-locks on in-memory nodes; their behaviour on real
// Redis is in multi_real_test.go.

func TestLockAllRejectsBadInput(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	var nilCtx context.Context
	cases := []struct {
		name string
		ctx  context.Context
		keys []string
		ttl  time.Duration
		want string
	}{
		{"nil keys", bg(), nil, time.Second, "no keys"},
		{"no keys", bg(), []string{}, time.Second, "no keys"},
		{"empty key", bg(), []string{"a", ""}, time.Second, "empty key"},
		{"a key's fence counter", bg(), []string{"a", redlock.FenceKey("a")}, time.Second, `key "` + redlock.FenceKey("a") + `" begins with "redlock:", which is reserved`},
		{"a key's queue", bg(), []string{queueKey("a"), "a"}, time.Second, `begins with "redlock:"`},
		{"a key's queue entries", bg(), []string{"b", "a", queueEntriesKey("a")}, time.Second, "reserved"},
		{"a companion alone", bg(), []string{queueLeasesKey("z")}, time.Second, "reserved"},
		{"an election's key", bg(), []string{electionKey(t, "x")}, time.Second, "reserved"},
		{"a marker", bg(), []string{"a", "redlock:ceiling"}, time.Second, "reserved"},
		{"nil context", nilCtx, []string{"a"}, time.Second, "nil context"},
		{"ttl too short", bg(), []string{"a"}, time.Millisecond, "ttl must be between"},
		{"ttl too long", bg(), []string{"a"}, redlock.DefaultMaxTTL + time.Second, "WithMaxTTL(1m1s)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := c.TryLockAll(tc.ctx, tc.keys, tc.ttl)
			require.ErrorContains(t, err, tc.want)
			assert.Nil(t, l)
			l, err = c.LockAll(tc.ctx, tc.keys, tc.ttl)
			require.ErrorContains(t, err, tc.want)
			assert.Nil(t, l)
		})
	}
	c.WaitIdle()
	for _, s := range fn.servers {
		assert.Empty(t, s.Keys(), "bad input touches no node")
	}
	// Names outside the reserved prefix are the caller's, however they end.
	l, err := c.TryLockAll(bg(), []string{"a", "a:fence", "a:queue", "a:queue:entries", "election:x"}, time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Unlock(bg()))
}

func TestLockAllRejectsBadOption(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	_, err := c.TryLockAll(bg(), []string{"a"}, time.Second, redlock.WithRetry(nil))
	require.ErrorContains(t, err, "nil retry strategy")
}

func TestLockAllOnNilOrClosedClient(t *testing.T) {
	var nilClient *redlock.Client
	_, err := nilClient.TryLockAll(bg(), []string{"a"}, time.Second)
	require.Error(t, err)
	_, err = nilClient.LockAll(bg(), []string{"a"}, time.Second)
	require.Error(t, err)

	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	require.NoError(t, c.Close())
	_, err = c.LockAll(bg(), []string{"a"}, time.Second)
	require.ErrorIs(t, err, redlock.ErrClosed)
}

func TestLockAllSortsAndDedupesKeys(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	in := []string{"c", "a", "b", "a", "c"}
	l, err := c.TryLockAll(bg(), in, time.Second)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, l.Keys())
	assert.Equal(t, "a", l.Key(), "Key is the first key")
	assert.Equal(t, []string{"c", "a", "b", "a", "c"}, in, "the caller's slice is left alone")
	keys := l.Keys()
	keys[0] = "changed"
	assert.Equal(t, "a", l.Keys()[0], "Keys returns a copy")
	c.WaitIdle() // TryLockAll returns at the majority
	for _, k := range []string{"a", "b", "c"} {
		assert.Equal(t, 3, fn.holders(k, l.Token()), k)
	}
	require.NoError(t, l.Unlock(bg()))
	c.WaitIdle() // Unlock returns at the majority
	for _, k := range []string{"a", "b", "c"} {
		assert.Zero(t, fn.present(k), k)
	}
}

func TestKeysOfSingleAndNilLock(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "one", time.Second)
	require.NoError(t, err)
	assert.Equal(t, []string{"one"}, l.Keys())
	require.NoError(t, l.Unlock(bg()))
	var nilLock *redlock.Lock
	assert.Nil(t, nilLock.Keys())
}

func TestTryLockAllTakesNothingWhenOneKeyIsHeld(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	held, err := c.TryLock(bg(), "b", time.Second)
	require.NoError(t, err)

	l, err := c.TryLockAll(bg(), []string{"a", "b", "c"}, time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrTaken)
	require.ErrorContains(t, err, `key "b"`)
	assert.Nil(t, l)
	c.WaitIdle()
	assert.Zero(t, fn.present("a"))
	assert.Zero(t, fn.present("c"))
	assert.Equal(t, 3, fn.holders("b", held.Token()), "the holder's key is untouched")
}

func TestLockAllStopsWhenRetriesEnd(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	held, err := c.TryLock(bg(), "b", 10*time.Second)
	require.NoError(t, err)
	_, err = c.LockAll(bg(), []string{"a", "b"}, time.Second,
		redlock.WithRetry(redlock.LimitRetry(redlock.ConstantBackoff(time.Millisecond), 3)))
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrTaken)
	require.NoError(t, held.Unlock(bg()))
}

func TestLockAllEndsWithItsContext(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	held, err := c.TryLock(bg(), "b", 10*time.Second)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(bg(), 50*time.Millisecond)
	defer cancel()
	_, err = c.LockAll(ctx, []string{"a", "b"}, time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, held.Unlock(bg()))
}

func TestLockAllEndsWhenClientCloses(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	other := newClient(t, fn.pools)
	held, err := other.TryLock(bg(), "b", 10*time.Second)
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := c.LockAll(bg(), []string{"a", "b"}, time.Second, redlock.WithRetry(redlock.ConstantBackoff(time.Hour)))
		errc <- err
	}()
	// Close waits for LockAll, which must end on its own for Close to return.
	require.NoError(t, c.Close())
	err = <-errc
	if !assert.ErrorIs(t, err, redlock.ErrClosed) {
		return
	}
	require.NoError(t, held.Unlock(bg()))
}

func TestShutdownReleasesMultiLocks(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c, err := redlock.New(fn.pools, redlock.WithNodeTimeout(time.Second))
	require.NoError(t, err)
	l, err := c.TryLockAll(bg(), []string{"s1", "s2"}, time.Minute)
	require.NoError(t, err)
	require.NoError(t, c.Shutdown(bg()))
	for _, k := range l.Keys() {
		assert.Zero(t, fn.present(k), k)
	}
}

func TestMultiLockHealsAnEmptiedNode(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	l, err := c.TryLockAll(bg(), []string{"h1", "h2"}, time.Minute, redlock.WithRepairOnExtend())
	require.NoError(t, err)
	c.WaitIdle()
	fn.servers[0].FlushAll() // a node restarted without its data
	require.NoError(t, l.Extend(bg(), time.Minute))
	c.WaitIdle()
	assert.Equal(t, 3, fn.holders("h1", l.Token()))
	assert.Equal(t, 3, fn.holders("h2", l.Token()))

	// A node that kept one key of two does not hold the lock: extend_all
	// leaves it alone, and healing never fills it in partially.
	require.NoError(t, fn.servers[1].Set("h2", "other"))
	fn.servers[1].Del("h1")
	require.NoError(t, l.Extend(bg(), time.Minute))
	c.WaitIdle()
	assert.False(t, fn.servers[1].Exists("h1"))
	v, _ := fn.servers[1].Get("h2")
	assert.Equal(t, "other", v)
	require.NoError(t, l.Unlock(bg()))
}

func TestDoAllRejectsBadInput(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	ran := false
	work := func(context.Context) error { ran = true; return nil }
	require.ErrorContains(t, c.DoAll(bg(), nil, time.Second, work), "no keys")
	require.ErrorContains(t, c.DoAll(bg(), []string{"a"}, time.Second, nil), "nil function")
	assert.False(t, ran)
	require.NoError(t, c.DoAll(bg(), []string{"b", "a"}, 10*time.Second, work))
	assert.True(t, ran)
}

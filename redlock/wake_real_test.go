package redlock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

// Wake-ups across Clients on real redis-server processes: a blocked
// LockAll, RLock or AcquirePermit registers its Client as a watcher of the
// key it found taken, and an Unlock in another Client that frees the key
// wakes it, whatever its retry delay.

// slowRetry is a retry strategy whose delays (15s to 30s) no test waits
// out: only a wake-up lets a waiter in within its bound.
var slowRetry = redlock.WithRetry(redlock.ConstantBackoff(30 * time.Second))

// wakeBound is how soon after the release a woken waiter must hold its
// lock: the doc comments promise "within a message's way"; a second leaves
// room for a loaded machine.
const wakeBound = time.Second

// inspectors returns one client per server, to look at the nodes.
func inspectors(t *testing.T, servers []*redistest.Server) []*redis.Client {
	out := make([]*redis.Client, len(servers))
	for i, s := range servers {
		out[i] = s.Client(t)
	}
	return out
}

// watchers returns the size of key's watch set on each node.
func watchers(t *testing.T, nodes []*redis.Client, key string) []int64 {
	t.Helper()
	out := make([]int64, len(nodes))
	for i, c := range nodes {
		n, err := c.ZCard(bg(), keyspace.Standalone{}.Watch(key)).Result()
		require.NoError(t, err)
		out[i] = n
	}
	return out
}

// requireWatching waits until n Clients watch key on every node, each
// subscribed there to the channel it registered: a release on any node
// will then be heard.
func requireWatching(t *testing.T, nodes []*redis.Client, key string, n int) {
	t.Helper()
	// Each waiter registers and subscribes in its first round: node calls
	// (nodeCallBound).
	awaitState(t, nodeCallBound, fmt.Sprintf("%d Clients watching %q on every node, subscribed", n, key), func() bool {
		for _, c := range nodes {
			chans, err := c.ZRange(bg(), keyspace.Standalone{}.Watch(key), 0, -1).Result()
			if err != nil || len(chans) != n {
				return false
			}
			subs, err := c.PubSubNumSub(bg(), chans...).Result()
			if err != nil {
				return false
			}
			for _, ch := range chans {
				if subs[ch] == 0 {
					return false
				}
			}
		}
		return true
	}, onNodes(nodes, keyspace.Standalone{}.Watch(key)))
}

// waitFor runs get in a goroutine and reports its lock, error and time.
// Its context ends after 5s: past the bound, well short of the first retry
// (15s at least, slowRetry).
func waitFor(get func(ctx context.Context) (*redlock.Lock, error)) <-chan outcome {
	return waitForUpTo(5*time.Second, get)
}

// waitForUpTo is waitFor with a context that ends after d, for a test
// whose setup between the wait's start and the release takes longer.
func waitForUpTo(d time.Duration, get func(ctx context.Context) (*redlock.Lock, error)) <-chan outcome {
	got := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg(), d)
		defer cancel()
		l, err := get(ctx)
		got <- outcome{l, err, time.Now()}
	}()
	return got
}

// requireWoken unlocks held and requires the waiter's lock within
// wakeBound of the release; it unlocks the waiter's lock.
func requireWoken(t *testing.T, held *redlock.Lock, got <-chan outcome) {
	t.Helper()
	released := time.Now()
	require.NoError(t, held.Unlock(bg()))
	o := <-got
	require.NoError(t, o.err, "woken by the release, not by a retry")
	assert.Less(t, o.at.Sub(released), wakeBound, "got it %v after the release", o.at.Sub(released))
	require.NoError(t, o.l.Unlock(bg()))
}

func TestRealLockAllWokenByReleaseInAnotherClient(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	nodes := inspectors(t, servers)
	holder := newClient(t, pools)
	waiter := newClient(t, pools)
	keys := []string{"m1", "m2"}
	lockAll := func(ctx context.Context) (*redlock.Lock, error) {
		return waiter.LockAll(ctx, keys, 10*time.Second, slowRetry)
	}

	t.Run("a plain lock's Unlock", func(t *testing.T) {
		held, err := holder.TryLock(bg(), "m2", 10*time.Second)
		require.NoError(t, err)
		holder.WaitIdle() // on every node before the waiter tries
		got := waitFor(lockAll)
		requireWatching(t, nodes, "m2", 1)
		requireWoken(t, held, got)
		holder.WaitIdle() // both unlocks done on every node
		waiter.WaitIdle()
	})

	t.Run("a multi-lock's Unlock", func(t *testing.T) {
		held, err := holder.TryLockAll(bg(), []string{"m1", "m3"}, 10*time.Second)
		require.NoError(t, err)
		holder.WaitIdle()
		got := waitFor(lockAll)
		requireWatching(t, nodes, "m1", 1)
		requireWoken(t, held, got)
		holder.WaitIdle() // both unlocks done on every node
		waiter.WaitIdle()
	})

	t.Run("a fenced multi-lock waits and is woken too", func(t *testing.T) {
		held, err := holder.TryLockAll(bg(), []string{"m2"}, 10*time.Second, redlock.WithFencing())
		require.NoError(t, err)
		holder.WaitIdle()
		got := waitFor(func(ctx context.Context) (*redlock.Lock, error) {
			return waiter.LockAll(ctx, keys, 10*time.Second, slowRetry, redlock.WithFencing())
		})
		requireWatching(t, nodes, "m2", 1)
		requireWoken(t, held, got)
		holder.WaitIdle() // both unlocks done on every node
		waiter.WaitIdle()
	})
	// A release drops the watch set it woke.
	assert.Equal(t, []int64{0, 0, 0, 0, 0}, watchers(t, nodes, "m1"))
	assert.Equal(t, []int64{0, 0, 0, 0, 0}, watchers(t, nodes, "m2"))
}

func TestRealRLockWokenByWriterInAnotherClient(t *testing.T) {
	servers, pools := realNodes(t, 5)
	nodes := inspectors(t, servers)
	writer := newClient(t, pools)
	held, err := writer.TryLock(bg(), "doc", 10*time.Second)
	require.NoError(t, err)
	writer.WaitIdle() // on every node before the readers try

	// Two readers in two other Clients: one watch entry each, both woken.
	var waits []<-chan outcome
	var clients []*redlock.Client
	for range 2 {
		c := newClient(t, pools)
		clients = append(clients, c)
		waits = append(waits, waitFor(func(ctx context.Context) (*redlock.Lock, error) {
			return c.RLock(ctx, "doc", 10*time.Second, slowRetry)
		}))
	}
	requireWatching(t, nodes, "doc", 2)
	released := time.Now()
	require.NoError(t, held.Unlock(bg()))
	var readers []*redlock.Lock
	for _, got := range waits {
		o := <-got
		require.NoError(t, o.err, "woken by the release, not by a retry")
		assert.Less(t, o.at.Sub(released), wakeBound, "got it %v after the release", o.at.Sub(released))
		readers = append(readers, o.l)
	}
	for _, r := range readers {
		require.NoError(t, r.Unlock(bg()))
	}
	writer.WaitIdle()
	for _, c := range clients {
		c.WaitIdle()
	}
	assert.Equal(t, []int64{0, 0, 0, 0, 0}, watchers(t, nodes, "doc"), "the release dropped the watch set")
}

func TestRealAcquirePermitWokenByReleaseInAnotherClient(t *testing.T) {
	servers, pools := realNodes(t, 5)
	nodes := inspectors(t, servers)
	holder := newClient(t, pools)
	waiter := newClient(t, pools)
	a, err := holder.TryAcquirePermit(bg(), "sem", 2, 10*time.Second)
	require.NoError(t, err)
	holder.WaitIdle()
	b, err := holder.TryAcquirePermit(bg(), "sem", 2, 10*time.Second)
	require.NoError(t, err)
	defer func() { assert.NoError(t, b.Unlock(bg())) }()
	holder.WaitIdle() // on every node before the waiter tries

	got := waitFor(func(ctx context.Context) (*redlock.Lock, error) {
		return waiter.AcquirePermit(ctx, "sem", 2, 10*time.Second, slowRetry)
	})
	requireWatching(t, nodes, "sem", 1)
	requireWoken(t, a, got)
	holder.WaitIdle()
	waiter.WaitIdle()
	assert.Equal(t, []int64{0, 0, 0, 0, 0}, watchers(t, nodes, "sem"), "the release dropped the watch set")
}

func TestRealDeadWatcherExpires(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	nodes := inspectors(t, servers)
	holder := newClient(t, pools)
	held := retryUnanswered(t, holder, "the holder's lock", 3, func() (*redlock.Lock, error) {
		return holder.TryLockAll(bg(), []string{"d1", "d2"}, 30*time.Second)
	})
	holder.WaitIdle() // on every node before the waiter tries
	defer func() { assert.NoError(t, held.Unlock(bg())) }()

	// Several attempts of two calls of one Client: one entry per node. Its
	// lease is the delay, two node timeouts and a second: under 1.7s.
	const nodeTimeout = 200 * time.Millisecond
	waiter, err := redlock.New(pools, redlock.WithNodeTimeout(nodeTimeout))
	require.NoError(t, err)
	t.Cleanup(func() { _ = waiter.Close() }) // if the test ends early
	retry := redlock.WithRetry(redlock.ConstantBackoff(100 * time.Millisecond))
	ctx, cancel := context.WithTimeout(bg(), 500*time.Millisecond)
	defer cancel()
	done := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := waiter.LockAll(ctx, []string{"d1", "d2"}, 10*time.Second, retry)
			done <- err
		}()
	}
	for range 2 {
		require.ErrorIs(t, <-done, context.DeadlineExceeded)
	}
	// The Client dies: nobody renews its entry.
	require.NoError(t, waiter.Close())
	assert.Equal(t, []int64{1, 1, 1, 1, 1}, watchers(t, nodes, "d1"), "one entry per Client, however many attempts")
	for _, c := range nodes {
		ttl, err := c.PTTL(bg(), keyspace.Standalone{}.Watch("d1")).Result()
		require.NoError(t, err)
		assert.LessOrEqual(t, ttl, 1700*time.Millisecond, "the set expires with its last lease")
	}
	// Every PTTL was at most 1.7s just above, and a read of an expired key
	// removes it; nodeCallBound is ample.
	awaitState(t, nodeCallBound, "the dead watcher's set expired on every node", func() bool {
		for _, c := range nodes {
			if n, err := c.Exists(bg(), keyspace.Standalone{}.Watch("d1"), keyspace.Standalone{}.Watch("d2")).Result(); err != nil || n > 0 {
				return false
			}
		}
		return true
	}, onNodes(nodes, keyspace.Standalone{}.Watch("d1"), keyspace.Standalone{}.Watch("d2")))
}

func TestRealLockAllThatEndsWithAKeyReservedWakesItsWatchersAndLeavesNoWatchEntry(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 3)
	nodes := inspectors(t, servers)
	holder := newClient(t, pools)
	la, err := holder.TryLock(bg(), "wa", 30*time.Second)
	require.NoError(t, err)
	lb, err := holder.TryLock(bg(), "wb", 30*time.Second)
	require.NoError(t, err)
	holder.WaitIdle() // on every node before the waiters try
	requireHeldEverywhere(t, servers, la.Token(), "wa")
	requireHeldEverywhere(t, servers, lb.Token(), "wb")

	// A LockAll queues on "wa" and "wb" and watches "wa"; a reader in a
	// third Client watches "wa" too. Their retries are 15s to 30s apart:
	// only a wake-up lets the reader in within the bound.
	m := newClient(t, pools)
	mctx, mcancel := context.WithCancel(bg())
	defer mcancel()
	multi := make(chan error, 1)
	go func() {
		l, err := m.LockAll(mctx, []string{"wa", "wb"}, 10*time.Second, slowRetry)
		if err == nil {
			_ = l.Unlock(bg())
		}
		multi <- err
	}()
	requireWatching(t, nodes, "wa", 1)
	r := newClient(t, pools)
	reader := waitForUpTo(20*time.Second, func(ctx context.Context) (*redlock.Lock, error) {
		return r.RLock(ctx, "wa", 10*time.Second, slowRetry)
	})
	requireWatching(t, nodes, "wa", 2)

	// "wa" freed: reserved for the LockAll, which waits for "wb"; the
	// reader is not woken (the key is not free to it).
	require.NoError(t, la.Unlock(bg()))
	awaitState(t, 2*nodeCallBound, "wa reserved for the multi-lock on every node", func() bool {
		for _, c := range nodes {
			if !strings.HasPrefix(c.Get(bg(), "wa").Val(), "q:") {
				return false
			}
		}
		return true
	}, onNodes(nodes, "wa", keyspace.Standalone{}.Watch("wa")))

	// The LockAll gives up: leaving the queues frees "wa", which wakes its
	// watchers as a release would, and drops their set.
	mcancel()
	require.ErrorIs(t, <-multi, redlock.ErrNotObtained)
	gaveUp := time.Now()
	o := <-reader
	require.NoError(t, o.err, "woken when the multi-lock left, not by a retry")
	assert.Less(t, o.at.Sub(gaveUp), wakeBound, "got it %v after the multi-lock gave up", o.at.Sub(gaveUp))
	require.NoError(t, o.l.Unlock(bg()))
	require.NoError(t, lb.Unlock(bg()))
	m.WaitIdle()
	r.WaitIdle()
	holder.WaitIdle()
	assert.Equal(t, []int64{0, 0, 0}, watchers(t, nodes, "wa"), "a watch entry outlived the calls")
	assert.Equal(t, []int64{0, 0, 0}, watchers(t, nodes, "wb"), "a watch entry outlived the calls")
	requireAbsent(t, servers, "wa", "wb")
}

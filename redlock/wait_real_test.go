package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/fanout"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// The waiting tests on real nodes: the bounds Lock, Close and a hand-off
// promise while some nodes are silent. The lock's TTL is 5s, so the default
// node timeout is 250ms; every bound asserted is 1s.
const (
	faultTTL = 5 * time.Second
	bound    = time.Second
)

// closeBound bounds Close, which waits for the node calls still in flight:
// a call to a silent node runs to fanout.CallBound of the node timeout (at
// most MaxNodeTimeout), and the cleanup of its attempt as long again after
// it.
var closeBound = 2*fanout.CallBound(redlock.MaxNodeTimeout) + bound

// silentNode returns a pool whose node accepts connections (the kernel
// completes them) but never reads or answers: a blackholed node.
func silentNode(t *testing.T) pool.Pool {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	p, err := pool.FromURL("redis://" + ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// faultyNodes is five nodes, two of them silent: one SIGSTOPped and one
// that never answers (blackholed). The silent ones are silent before any
// Client connects, so every connection to them is a new one.
func faultyNodes(t *testing.T) ([]*redistest.Server, []pool.Pool) {
	servers, pools := realNodes(t, 4)
	servers[3].Pause()
	t.Cleanup(servers[3].Resume)
	return servers, append(pools, silentNode(t))
}

// defaultClient is a Client with the default options, closed when t ends
// (and its Close is bounded).
func defaultClient(t *testing.T, pools []pool.Pool) *redlock.Client {
	t.Helper()
	c, err := redlock.New(pools)
	require.NoError(t, err)
	t.Cleanup(func() {
		start := time.Now()
		assert.NoError(t, c.Close())
		assert.Less(t, time.Since(start), closeBound, "Close is bounded by two call bounds")
	})
	return c
}

// unlockLate unlocks l, a lock on five nodes of which two are faulty
// (faultyNodes, or two SIGSTOPped), and accepts ErrNotReleased when it
// comes from live nodes that answered after the node timeout: with two of
// five nodes faulty, one live node past the default 250ms leaves
// Unlock short of a majority of answers (seen under two CPU hogs), while
// the release still runs on that node. What the tests check is the
// hand-off that follows, which fails when the release does not run.
func unlockLate(t *testing.T, l *redlock.Lock, what string) {
	t.Helper()
	if !releasedOrLate(t, l.Unlock(bg()), what) {
		t.FailNow()
	}
}

// releasedOrLate reports whether err, an Unlock's, is nil or says only that
// some node answered after the node timeout (ErrNotReleased with
// ErrNodeTimeout), and logs the latter; any other error fails t (with
// t.Errorf, so it may run in any goroutine).
func releasedOrLate(t testing.TB, err error, what string) bool {
	t.Helper()
	return doneOrLate(t, err, redlock.ErrNotReleased, what)
}

// extendedOrLate is releasedOrLate for an Extend: nil, or ErrNotExtended
// only for want of answers within the node timeout (ErrNodeTimeout).
func extendedOrLate(t testing.TB, err error, what string) bool {
	t.Helper()
	return doneOrLate(t, err, redlock.ErrNotExtended, what)
}

// doneOrLate is releasedOrLate and extendedOrLate: refused is the error
// of the call that was not done.
func doneOrLate(t testing.TB, err, refused error, what string) bool {
	t.Helper()
	if err == nil {
		return true
	}
	if !errors.Is(err, refused) || !errors.Is(err, redlock.ErrNodeTimeout) {
		t.Errorf("%s: %v: want nil, or %q for want of answers (ErrNodeTimeout)", what, err, refused)
		return false
	}
	t.Logf("%s: %v (answers came after the node timeout; its node calls still run)", what, err)
	return true
}

// tryLate runs try, an acquisition by c on nodes as faulty as unlockLate's,
// and tries again, at most twice more, when it was refused only
// for want of answers (ErrNodeTimeout): with two of five nodes faulty, one
// live node past the default 250ms node timeout leaves the attempt short
// of a majority, as it does Unlock (unlockLate). Before trying again it
// waits for c's calls, the refused attempt's cleanup among them. Each
// attempt must still decide within bound.
func tryLate(t *testing.T, c *redlock.Client, what string, try func() (*redlock.Lock, error)) *redlock.Lock {
	t.Helper()
	return retryUnanswered(t, c, what, 3, func() (*redlock.Lock, error) {
		start := time.Now()
		l, err := try()
		assert.Less(t, time.Since(start), bound, "%s: decided at the majority, or at the node timeout", what)
		return l, err
	})
}

type outcome struct {
	l   *redlock.Lock
	err error
	at  time.Time
}

// lockIn calls c.Lock with a deadline in a goroutine, and reports whether a
// lock it got was valid when it returned.
func lockIn(t *testing.T, c *redlock.Client, key string, d time.Duration) <-chan outcome {
	got := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg(), d)
		defer cancel()
		l, err := c.Lock(ctx, key, faultTTL)
		at := time.Now()
		if err == nil {
			assert.True(t, at.Before(l.Until()), "a lock is returned only before its Until()")
		}
		got <- outcome{l, err, at}
	}()
	return got
}

// The hand-off on real Redis with silent nodes (SIGSTOPped, blackholed)
// and a monitoring tool subscribed to every channel: the waiter, whose own
// rounds come every 30s, is handed the key by the release well before its
// next round (10s: no window a loaded machine reaches). How soon, and
// that a Lock's deadline holds meanwhile, TestHandOffDespiteSilentNodes
// and TestLockHonoursItsContextWhileNodesAreSilent check in virtual time.
func TestRealHandOffDespiteSilentNodes(t *testing.T) {
	first(t) // on silent nodes: the calls there linger (4 node timeouts)
	for _, tc := range []struct {
		name  string
		nodes func(t *testing.T) ([]*redistest.Server, []pool.Pool) // the live servers, all pools
	}{
		{"two of five SIGSTOPped", func(t *testing.T) ([]*redistest.Server, []pool.Pool) {
			servers, pools := realNodes(t, 5)
			for _, s := range servers[3:] {
				s.Pause()
				t.Cleanup(s.Resume)
			}
			return servers[:3], pools
		}},
		{"one of five blackholed", func(t *testing.T) ([]*redistest.Server, []pool.Pool) {
			servers, pools := realNodes(t, 4)
			return servers, append(pools, silentNode(t))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // nodes of its own
			live, pools := tc.nodes(t)
			// A monitoring tool subscribed to every channel changes nothing.
			monitor := live[0].Client(t).PSubscribe(bg(), "*")
			t.Cleanup(func() { _ = monitor.Close() })
			_, err := monitor.Receive(bg())
			require.NoError(t, err)
			holder := defaultClient(t, pools)
			waiter := defaultClient(t, pools)
			for round := range 3 { // a fresh Client, then one that has waited before
				l := tryLate(t, holder, fmt.Sprintf("round %d: the holder's TryLock", round), func() (*redlock.Lock, error) {
					return holder.TryLock(bg(), "k", faultTTL)
				})
				holder.WaitIdle() // its SETs have all landed (or timed out on the silent node)
				got := make(chan outcome, 1)
				go func() {
					ctx, cancel := context.WithTimeout(bg(), time.Minute)
					defer cancel()
					l, err := waiter.Lock(ctx, "k", faultTTL, slowRetry)
					got <- outcome{l, err, time.Now()}
				}()
				other := lockIn(t, defaultClient(t, pools), "other", time.Minute)
				o := <-other
				require.NoError(t, o.err, "a waiter on another key is not held up")
				unlockLate(t, o.l, fmt.Sprintf("round %d: the other key's Unlock", round))

				requireQueued(t, live, "k", l.Token())
				released := time.Now()
				// The release hands the key to the waiter on each node
				// that runs it, whether or not its answer comes within the
				// holder's node timeout (250ms): under a load average of 10
				// on two cores, three live nodes answered late and Unlock
				// reported ErrNotReleased. The hand-off is what is checked.
				unlockLate(t, l, fmt.Sprintf("round %d: the holder's Unlock", round))
				o = <-got
				require.NoError(t, o.err, "round %d", round)
				assert.Less(t, o.at.Sub(released), 10*time.Second, "round %d: the waiter got the lock %v after the release", round, o.at.Sub(released))
				// The waiter's release may be answered late too (four live
				// nodes past 250ms, a quiet -cpu 1,2 run): the next round
				// starts once it ran on every live node.
				unlockLate(t, o.l, fmt.Sprintf("round %d: the waiter's Unlock", round))
				redistest.WaitFor(t, 5*time.Second, "the waiter's release of k on every live node", func() (bool, string) {
					n := realHolders(t, live, "k", o.l.Token())
					return n == 0, fmt.Sprint(n, " live nodes still hold it")
				})
			}
		})
	}
}

// requireQueued waits until the waiter has queued for key on every live node
// where the holder's SET landed (a node where it timed out on a loaded
// machine may have given the free key to the waiter at once), and shows the
// nodes if it never does.
func requireQueued(t *testing.T, live []*redistest.Server, key, holder string) {
	t.Helper()
	// The waiter queues in its first round, one call per node: twice
	// nodeCallBound, as sixteen contenders share the machine.
	awaitState(t, 2*nodeCallBound, "the waiter queued for "+key+" on every live node the holder has", func() bool {
		for _, s := range live {
			c := s.Client(t)
			if c.Get(bg(), key).Val() == holder && c.ZCard(bg(), queueKey(key)).Val() < 1 {
				return false
			}
		}
		return true
	}, onServers(live, key, queueKey(key), queueEntriesKey(key)))
}

func TestRealSixteenContendersAllGetTheLock(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 5)
	clients := []*redlock.Client{newClient(t, pools), newClient(t, pools), newClient(t, pools), newClient(t, pools)}
	var (
		mu    sync.Mutex
		waits []time.Duration
		wg    sync.WaitGroup
		held  sync.Mutex // fails the test (TryLock) if two hold at once
	)
	const rounds = 5
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[g%len(clients)]
			for range rounds {
				ctx, cancel := context.WithTimeout(bg(), 60*time.Second)
				start := time.Now()
				l, err := c.Lock(ctx, "hot", 10*time.Second)
				cancel()
				if !assert.NoError(t, err, "every contender gets the lock") {
					return
				}
				if !assert.True(t, held.TryLock(), "two holders at once") {
					return
				}
				mu.Lock()
				waits = append(waits, time.Since(start))
				mu.Unlock()
				time.Sleep(time.Millisecond)
				held.Unlock()
				// A release past the node timeout leaves the key to
				// expire (10s): the next contender waits for it, well
				// within its 60s.
				releasedOrLate(t, l.Unlock(bg()), "a contender's Unlock")
			}
		}()
	}
	wg.Wait()
	require.Len(t, waits, 16*rounds)
	slices.Sort(waits)
	t.Logf("16 contenders x %d rounds: wait p50 %v, p99 %v, max %v", rounds,
		waits[len(waits)/2], waits[len(waits)*99/100], waits[len(waits)-1])
}

// An expiry hands nothing over: the waiter's next round takes the free key,
// within the backoff's bound after the key expired.
func TestRealExpiryWithoutReleaseStillEndsInAcquisition(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 5)
	holder := newClient(t, pools)
	waiter := newClient(t, pools)
	_, err := holder.TryLock(bg(), "res", 300*time.Millisecond) // never unlocked
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
	defer cancel()
	start := time.Now()
	l, err := waiter.Lock(ctx, "res", time.Minute)
	require.NoError(t, err, "a round takes the key after the holder's expired")
	t.Logf("acquired %v after the holder's 300ms lock; the default backoff's bound is 100ms", time.Since(start))
	releasedOrLate(t, l.Unlock(bg()), "l's Unlock")
}

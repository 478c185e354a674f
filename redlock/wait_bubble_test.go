package redlock_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

var setScript = pool.NewScript(`return redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])`)

// set writes key=value with ttl on node i, past its faults.
func (b *bubbleNodes) set(t *testing.T, i int, key, value string, ttl time.Duration) {
	t.Helper()
	if _, err := b.faults[i].Pool.Eval(t.Context(), setScript, []string{key}, value, ttl.Milliseconds()); err != nil {
		t.Fatalf("node %d: SET %s: %v", i, key, err)
	}
}

// A contended attempt does not wait the node timeout for a silent node: once
// a node answered that the key is held, the silent one gets a quarter of the
// node timeout (50ms at most). Here the attempt can still win only through
// the silent node: two live nodes said yes and two said no, which may be a
// split, so TryLock makes its two settling attempts, each after a delay of
// at most 50ms: 250ms at most in all, against a node timeout of 2s. The
// nodes it took are given back.
func TestContendedAttemptDoesNotWaitOutASilentNode(t *testing.T) {
	virtual(t)
	synctest.Test(t, func(t *testing.T) {
		nodes := newBubbleNodes(t, 5)
		nodes.faults[4].Hang(true)
		for i := range 2 { // another holder, on two nodes only
			nodes.set(t, i, "k", "other", time.Minute)
		}
		const nodeTimeout = 2 * time.Second
		c := newClient(t, nodes.pools, redlock.WithNodeTimeout(nodeTimeout))
		start := time.Now()
		_, err := c.TryLock(t.Context(), "k", 10*time.Second)
		took := time.Since(start)
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, redlock.ErrPending, "the silent node is reported pending")
		assert.LessOrEqual(t, took, 250*time.Millisecond, "a contended TryLock waited for the silent node (node timeout %v)", nodeTimeout)
		c.WaitIdle()
		for i := 2; i < 4; i++ {
			_, held := nodes.get(t, i, "k")
			assert.False(t, held, "node %d, taken by the attempt, was not given back", i)
		}
	})
}

// Eight Clients contend on one key while one node of five never answers,
// from the start: each takes it eight times, and no wait lasts a node
// timeout (250ms for the 5s TTL). Splits among waiters with the silent node
// in them would last a node timeout each, for every new Lock call, and the
// queue would crawl.
func TestContentionWithABlackholedNodeKeepsEveryWaitBounded(t *testing.T) {
	virtual(t)
	for seed := range uint64(4) {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes := newBubbleNodes(t, 5)
				nodes.faults[4].Hang(true)
				nodes.delayCalls(seed, 2*time.Millisecond, 0, 1, 2, 3) // the waiters' calls cross
				var clients []*redlock.Client
				for range 8 {
					c, err := redlock.New(nodes.pools)
					require.NoError(t, err)
					t.Cleanup(func() { _ = c.Close() })
					clients = append(clients, c)
				}
				var mu sync.Mutex
				var waits []time.Duration
				var wg sync.WaitGroup
				for _, c := range clients {
					wg.Go(func() {
						for range 8 {
							start := time.Now()
							ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
							l, err := c.Lock(ctx, "k", faultTTL)
							cancel()
							if !assert.NoError(t, err) {
								return
							}
							mu.Lock()
							waits = append(waits, time.Since(start))
							mu.Unlock()
							time.Sleep(time.Millisecond) // the holder's work
							assert.NoError(t, l.Unlock(t.Context()))
						}
					})
				}
				wg.Wait()
				require.Len(t, waits, 64)
				longest := slices.Max(waits)
				t.Logf("%d waits, the longest %v", len(waits), longest)
				// The longest was 18-68ms over the four seeds; with the contended
				// grace as long as the node timeout, three of them wait 265ms.
				assert.Less(t, longest, 250*time.Millisecond, "the longest of %d waits lasted a node timeout", len(waits))
			})
		})
	}
}

// A Lock whose context ends while its key is held and two nodes of five
// never answer returns at its deadline, not a node timeout later; the
// waiters of other Clients then get the lock in turn, each valid when
// returned.
func TestLockHonoursItsContextWhileNodesAreSilent(t *testing.T) {
	virtual(t)
	synctest.Test(t, func(t *testing.T) {
		nodes := newBubbleNodes(t, 5)
		nodes.faults[3].Hang(true)
		nodes.faults[4].Hang(true)
		client := func() *redlock.Client {
			c, err := redlock.New(nodes.pools)
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			return c
		}
		l, err := client().TryLock(t.Context(), "k", faultTTL)
		require.NoError(t, err, "three live nodes of five are a majority")
		var waiting []<-chan outcome
		for range 3 {
			waiting = append(waiting, lockIn(t, client(), "k", time.Minute))
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		_, err = client().Lock(ctx, "k", faultTTL)
		took := time.Since(start)
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 100*time.Millisecond, took, "Lock(100ms) returned at its deadline")

		require.NoError(t, l.Unlock(t.Context()))
		for range waiting {
			var o outcome
			select {
			case o = <-waiting[0]:
			case o = <-waiting[1]:
			case o = <-waiting[2]:
			}
			require.NoError(t, o.err)
			require.NoError(t, o.l.Unlock(t.Context()))
		}
	})
}

// A release hands the key to a waiter of another Client at once although
// nodes are silent (two of five, or one), round after round: the waiter
// gets it sooner than the node timeout (250ms for the 5s TTL), through the
// release's grant (its own rounds come every 30s), which does not wait for
// the silent nodes.
func TestHandOffDespiteSilentNodes(t *testing.T) {
	virtual(t)
	for _, silent := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d of five silent", silent), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes := newBubbleNodes(t, 5)
				for i := 5 - silent; i < 5; i++ {
					nodes.faults[i].Hang(true)
				}
				holder, err := redlock.New(nodes.pools)
				require.NoError(t, err)
				t.Cleanup(func() { _ = holder.Close() })
				waiter, err := redlock.New(nodes.pools)
				require.NoError(t, err)
				t.Cleanup(func() { _ = waiter.Close() })
				for round := range 3 { // a fresh Client, then one that has waited before
					l, err := holder.TryLock(t.Context(), "k", faultTTL)
					require.NoError(t, err, "round %d", round)
					holder.WaitIdle()
					got := make(chan outcome, 1)
					go func() {
						// Rounds 30s apart: only the release's grant hands it on.
						l, err := waiter.Lock(t.Context(), "k", faultTTL, slowRetry)
						got <- outcome{l, err, time.Now()}
					}()
					synctest.Wait() // the waiter queued
					released := time.Now()
					require.NoError(t, l.Unlock(t.Context()))
					o := <-got
					require.NoError(t, o.err, "round %d", round)
					took := o.at.Sub(released)
					t.Logf("round %d: handed on %v after the release", round, took)
					assert.Less(t, took, 250*time.Millisecond, "round %d: the waiter got the lock %v after the release", round, took)
					require.NoError(t, o.l.Unlock(t.Context()))
					waiter.WaitIdle()
				}
			})
		})
	}
}

package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/redlock"
)

// TestRealWakeUpBeforeTheSubscriptionIsConfirmed is
// TestWakeUpMadeBeforeTheSubscriptionIsNotLost on redis-server processes:
// the waiter's Client registers on every node while it is subscribed on
// none, the holder's Unlock publishes to nobody, and the waiter must hold
// its lock within wakeBound once its listeners open, not at its retry.
func TestRealWakeUpBeforeTheSubscriptionIsConfirmed(t *testing.T) {
	servers, pools := realNodes(t, 5)
	nodes := inspectors(t, servers)
	holder := newClient(t, pools)
	for _, tc := range deafCases {
		t.Run(tc.name, func(t *testing.T) {
			key := "deaf/" + tc.name
			open := make(chan struct{})
			waiter := newClient(t, withHeldListeners(pools, open))
			held, err := tc.hold(bg(), holder, key)
			require.NoError(t, err)
			holder.WaitIdle() // on every node before the waiter tries

			got := waitFor(func(ctx context.Context) (*redlock.Lock, error) {
				return tc.wait(ctx, waiter, key, slowRetry)
			})
			if tc.name != "Lock" { // a Lock queues instead
				requireDeafWatcher(t, nodes, key)
			} else {
				waitQueuedReal(t, nodes, key)
			}
			released := time.Now()
			require.NoError(t, held.Unlock(bg()))
			holder.WaitIdle() // published on every node, to nobody
			close(open)
			o := <-got
			require.NoError(t, o.err, "tried again once subscribed, not at its retry")
			require.Less(t, o.at.Sub(released), wakeBound, "got it %v after the release", o.at.Sub(released))
			require.NoError(t, o.l.Unlock(bg()))
			waiter.WaitIdle()
		})
	}
}

// requireDeafWatcher waits until one Client watches key on every node,
// with nobody subscribed to its channel.
func requireDeafWatcher(t *testing.T, nodes []*redis.Client, key string) {
	t.Helper()
	// A waiter registers its channel in its first round: node calls
	// (nodeCallBound).
	awaitState(t, nodeCallBound, "a deaf Client watching "+key+" on every node", func() bool {
		for _, c := range nodes {
			chans, err := c.ZRange(bg(), keyspace.Standalone{}.Watch(key), 0, -1).Result()
			if err != nil || len(chans) != 1 {
				return false
			}
			subs, err := c.PubSubNumSub(bg(), chans...).Result()
			require.NoError(t, err)
			require.Zero(t, subs[chans[0]], "the listener was held")
		}
		return true
	}, onNodes(nodes, keyspace.Standalone{}.Watch(key)))
}

// waitQueuedReal waits until key's queue holds a waiter on every node.
func waitQueuedReal(t *testing.T, nodes []*redis.Client, key string) {
	t.Helper()
	// The waiter queues in its first round: node calls (nodeCallBound).
	awaitState(t, nodeCallBound, "a waiter in "+key+"'s queue on every node", func() bool {
		for _, c := range nodes {
			if n, err := c.ZCard(bg(), queueKey(key)).Result(); err != nil || n != 1 {
				return false
			}
		}
		return true
	}, onNodes(nodes, queueKey(key)))
}

package pool_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
)

// TestShardedListenerFollowsSlotMove runs on a real Redis 7 cluster of three
// masters: a sharded channel is subscribed on the master that owns its slot
// and hears SPUBLISH there; when the slot moves to another master, the old
// one drops the subscription and the listener subscribes on the new owner.
func TestShardedListenerFollowsSlotMove(t *testing.T) {
	cl := redistest.StartCluster(t, 3, redistest.NoPersistence)
	addrs := cl.Addrs()
	p, err := pool.FromURL("redis+cluster://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr="))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := p.(pool.Notifier).Listen(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	sl, ok := l.(pool.ShardedListener)
	require.True(t, ok, "a cluster listener subscribes sharded channels")
	require.Eventually(t, sl.Sharded, 10*time.Second, 5*time.Millisecond, "the listener found SSUBSCRIBE")

	ch := keyslot.ShardChannel("test:grant", "orders:1")
	require.NoError(t, sl.SSubscribe(ctx, ch))
	from := cl.MasterOf(ch)
	requireShardListed(t, l, from, ch)
	requireHeard(t, l, from, ch, "before")

	// The slot (empty: no key lives there) moves to the next master; every
	// master is told, the new owner first.
	to := cl.Masters[0]
	if to == from {
		to = cl.Masters[1]
	}
	id, err := to.Client(t).ClusterMyID(ctx).Result()
	require.NoError(t, err)
	slot := keyslot.Slot(ch)
	for _, m := range append([]*redistest.Server{to, from}, cl.Masters...) {
		require.NoError(t, m.Client(t).Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", id).Err())
	}
	require.Eventually(t, func() bool {
		return len(from.Client(t).PubSubShardChannels(ctx, ch).Val()) == 0
	}, 10*time.Second, 5*time.Millisecond, "the old owner dropped %q", ch)
	requireShardListed(t, l, to, ch)
	requireHeard(t, l, to, ch, "after")

	require.NoError(t, sl.SUnsubscribe(ctx, ch))
	require.Eventually(t, func() bool {
		return len(to.Client(t).PubSubShardChannels(ctx, ch).Val()) == 0
	}, 10*time.Second, 5*time.Millisecond, "SUnsubscribe reached the owner")
}

// requireShardListed waits until m lists ch among its shard channels and l
// reports it subscribed.
func requireShardListed(t *testing.T, l pool.Listener, m *redistest.Server, ch string) {
	t.Helper()
	require.Eventually(t, func() bool {
		return l.(pool.SubscriptionState).Subscribed(ch) &&
			len(m.Client(t).PubSubShardChannels(context.Background(), ch).Val()) == 1
	}, 10*time.Second, 5*time.Millisecond, "%s subscribed %q", m.Addr(), ch)
}

// requireHeard publishes payload on ch with SPUBLISH at m and requires l to
// deliver it.
func requireHeard(t *testing.T, l pool.Listener, m *redistest.Server, ch, payload string) {
	t.Helper()
	n, err := m.Client(t).SPublish(context.Background(), ch, payload).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "one subscriber on %s", m.Addr())
	timeout := time.After(10 * time.Second)
	for {
		select {
		case msg := <-l.Messages():
			if msg.Channel == ch && msg.Payload == payload {
				return
			}
		case <-timeout:
			t.Fatalf("%q on %q not delivered", payload, ch)
		}
	}
}

// TestShardedListenerNeverWaitsOnTheNode has the listener of a cluster whose
// seed accepts connections and never answers (a frozen master): the probe
// and the placement hang in the listener's goroutine, while SSubscribe,
// SUnsubscribe and Close return, Close ending every goroutine.
func TestShardedListenerNeverWaitsOnTheNode(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var held []net.Conn
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // never read, never answered
		}
	}()
	p, err := pool.FromURL("redis+cluster://" + ln.Addr().String())
	require.NoError(t, err)
	ctx := context.Background()
	l, err := p.(pool.Notifier).Listen(ctx)
	require.NoError(t, err)
	sl := l.(pool.ShardedListener)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100 {
			ch := keyslot.ShardChannel("test:grant", strconv.Itoa(i))
			assert.NoError(t, sl.SSubscribe(ctx, ch))
			assert.NoError(t, sl.SUnsubscribe(ctx, ch))
		}
		assert.False(t, sl.Sharded(), "no answer: not known to be sharded")
		assert.NoError(t, l.Close())
		for range l.Messages() {
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a call waited on the silent node")
	}
	require.NoError(t, p.Close())
	ln.Close()
	<-accepted
	for _, c := range held {
		c.Close()
	}
}

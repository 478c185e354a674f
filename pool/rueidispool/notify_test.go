package rueidispool_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/pool/rueidispool"
	"github.com/redlockgo/redlock/redlock"
)

// The Notifier contract is checked by the conformance suite (TestConformance);
// these tests cover what is particular to rueidis, and the lock end to end.

// listen opens a Listener on p, closed when t ends.
func listen(t *testing.T, p pool.Pool) pool.Listener {
	t.Helper()
	n, ok := p.(pool.Notifier)
	require.True(t, ok, "the rueidis adapter implements pool.Notifier")
	l, err := n.Listen(bg())
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// numSub returns the node's count of subscribers to channel, -1 if it
// cannot tell.
func numSub(rc *redis.Client, channel string) int64 {
	ctx, cancel := context.WithTimeout(bg(), time.Second)
	defer cancel()
	n, err := rc.PubSubNumSub(ctx, channel).Result()
	if err != nil {
		return -1
	}
	return n[channel]
}

// receive publishes payload on channel at each poll until l delivers it.
func receive(t *testing.T, rc *redis.Client, l pool.Listener, channel, payload string) {
	t.Helper()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(bg(), time.Second)
		_ = rc.Publish(ctx, channel, payload).Err() // fails while the node restarts
		cancel()
		for {
			select {
			case m := <-l.Messages():
				if m.Channel == channel && m.Payload == payload {
					return true
				}
			default:
				return false
			}
		}
	}, 30*time.Second, 50*time.Millisecond, "no message %q on %q", payload, channel)
}

func TestSubscribeRightAfterListenWaitsForTheConnection(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	p, err := rueidispool.FromURL(srv.URL())
	require.NoError(t, err)
	defer p.Close()
	l := listen(t, p)
	require.NoError(t, l.Subscribe(bg(), "ch"))
	// Not Eventually: Subscribe returned once the node confirmed.
	assert.Equal(t, int64(1), numSub(srv.Client(t), "ch"))
}

// rueidis falls back to RESP2 for servers without HELLO (Redis 5); there a
// subscription takes a connection of its own, which must be reopened too.
func TestNotificationsOverRESP2(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	p, err := rueidispool.FromURL(srv.URL() + "?protocol=2")
	require.NoError(t, err)
	defer p.Close()
	rc := srv.Client(t)
	l := listen(t, p)
	require.NoError(t, l.Subscribe(bg(), "a", "b"))
	receive(t, rc, l, "a", "over RESP2")

	require.NoError(t, l.Unsubscribe(bg(), "a"))
	require.Eventually(t, func() bool { return numSub(rc, "a") == 0 }, 10*time.Second, 10*time.Millisecond)
	receive(t, rc, l, "b", "still subscribed")

	srv.Restart(t)
	receive(t, rc, l, "b", "after the restart")
	assert.Zero(t, numSub(rc, "a"), "an unsubscribed channel is not subscribed again")
	require.NoError(t, l.Close())
}

// Unsubscribe with no channels removes them all, as UNSUBSCRIBE does (and
// as the go-redis adapter does); the listener stays usable.
func TestUnsubscribeAll(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	p, err := rueidispool.FromURL(srv.URL())
	require.NoError(t, err)
	defer p.Close()
	rc := srv.Client(t)
	l := listen(t, p)
	require.NoError(t, l.Subscribe(bg(), "x", "y"))
	require.NoError(t, l.Unsubscribe(bg()))
	require.Eventually(t, func() bool { return numSub(rc, "x") == 0 && numSub(rc, "y") == 0 },
		10*time.Second, 10*time.Millisecond)
	require.NoError(t, l.Unsubscribe(bg()), "with nothing subscribed")
	require.NoError(t, l.Subscribe(bg(), "z"))
	receive(t, rc, l, "z", "still listening")

	srv.Restart(t)
	receive(t, rc, l, "z", "after the restart")
	assert.Zero(t, numSub(rc, "x"), "only z is subscribed again")
	assert.Zero(t, numSub(rc, "y"))
}

// A connection the node closes (CLIENT KILL, a proxy, an idle timeout) is
// reopened like one lost to a restart.
func TestListenerReconnectsAfterClientKill(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	p, err := rueidispool.FromURL(srv.URL())
	require.NoError(t, err)
	defer p.Close()
	rc := srv.Client(t)
	l := listen(t, p)
	require.NoError(t, l.Subscribe(bg(), "k"))
	receive(t, rc, l, "k", "before")
	killed, err := rc.ClientKillByFilter(bg(), "TYPE", "pubsub").Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), killed)
	receive(t, rc, l, "k", "after")
}

func TestListenOverTheCallersClient(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	c := newClient(t, srv.Addr())
	p := rueidispool.New(c)
	rc := srv.Client(t)
	l := listen(t, p)
	require.NoError(t, l.Subscribe(bg(), "mine"))
	receive(t, rc, l, "mine", "hello")
	require.NoError(t, l.Close())
	require.NoError(t, p.Close())
	require.NoError(t, c.Do(bg(), c.B().Ping().Build()).Error(), "the caller's client stays open")
	require.Eventually(t, func() bool { return numSub(rc, "mine") == 0 }, 10*time.Second, 10*time.Millisecond,
		"the subscribed connection is closed, not given back to the client's pool")
}

func TestListenCanceledContext(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	c := newClient(t, srv.Addr())
	ctx, cancel := context.WithCancel(bg())
	cancel()
	l, err := rueidispool.New(c).(pool.Notifier).Listen(ctx)
	require.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, l)
}

// Two Clients over rueidis pools on three nodes: the holder's Unlock wakes
// the other Client's waiter, whose backoff alone would keep it asleep for
// half an hour or more.
func TestReleaseWakesWaiterOfAnotherClient(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.NoPersistence)
	pools := make([]pool.Pool, len(servers))
	for i, s := range servers {
		p, err := rueidispool.FromURL(s.URL())
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		pools[i] = p
	}
	newLockClient := func() *redlock.Client {
		c, err := redlock.New(pools, redlock.WithNodeTimeout(time.Second))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	holder, waiter := newLockClient(), newLockClient()
	const key = "invoice:42"

	l, err := holder.TryLock(bg(), key, time.Minute)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(bg(), time.Minute)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		wl, err := waiter.Lock(ctx, key, time.Minute, redlock.WithRetry(redlock.ConstantBackoff(time.Hour)))
		if err == nil {
			err = wl.Unlock(bg())
		}
		got <- err
	}()

	// The waiter's Client listens for its grants on every node, and on each
	// the waiter is queued, or took the key itself, before the holder
	// releases; until then a grant could go unheard. (TryLock returns at the
	// majority: the holder's SET on the last node may land after the
	// waiter's first attempt there, which then wins that node.)
	rcs := make([]*redis.Client, len(servers))
	for i, s := range servers {
		rcs[i] = s.Client(t)
	}
	require.Eventually(t, func() bool {
		for _, rc := range rcs {
			chs, err := rc.PubSubChannels(bg(), "redlock:grant:*").Result()
			if err != nil || len(chs) != 1 || numSub(rc, chs[0]) != 1 {
				return false
			}
			v, err := rc.Get(bg(), key).Result()
			taken := err == nil && v != l.Token()
			if !taken && rc.ZCard(bg(), keyspace.Standalone{}.Queue(key)[1]).Val() != 1 {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond, "the waiter never listened, and queued or took the key, on every node")

	require.NoError(t, l.Unlock(bg()))
	require.NoError(t, <-got, "only the grant message can tell a waiter whose backoff is an hour")
}

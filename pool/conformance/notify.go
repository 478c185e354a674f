package conformance

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
)

// notifyWait bounds how long a message may take to arrive, reconnections
// included. Generous: the suite runs on loaded machines, and the polls below
// return as soon as the message is there.
const notifyWait = 30 * time.Second

// testNotifier checks pool.Notifier, the optional interface through which
// the lock hears of releases. It is skipped for an adapter that does not
// implement it.
func (s *suite) testNotifier(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	p := s.open(t, srv.URL(), nil)
	n, ok := p.(pool.Notifier)
	if !ok {
		t.Skipf("%T does not implement pool.Notifier", p)
	}
	rc := srv.Client(t)
	require.NoError(t, rc.Ping(ctx(t)).Err())

	// listen returns a new Listener on the node, closed when t ends.
	listen := func(t *testing.T) pool.Listener {
		t.Helper()
		l, err := n.Listen(ctx(t))
		require.NoError(t, err)
		require.NotNil(t, l)
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	// subscribe subscribes l to channels, retrying while the node is not
	// reachable, until the node counts l among each channel's subscribers.
	subscribe := func(t *testing.T, l pool.Listener, channels ...string) {
		t.Helper()
		require.NoError(t, l.Subscribe(ctx(t), channels...))
		require.Eventually(t, func() bool {
			return subscribers(rc, channels...) >= 1
		}, notifyWait, 10*time.Millisecond, "the node never counted the subscription")
	}

	t.Run("Delivers", func(t *testing.T) {
		l := listen(t)
		subscribe(t, l, "n:a", "n:b")
		const payload = "releaser-1 ticket 2 ✓" // the lock sends ids separated by spaces
		for _, ch := range []string{"n:a", "n:b"} {
			for _, m := range await(t, rc, l, ch, payload) {
				assert.Contains(t, []string{"n:a", "n:b"}, m.Channel, "only subscribed channels are delivered")
			}
		}
		require.NoError(t, rc.Publish(ctx(t), "n:other", "x").Err())
		for _, m := range await(t, rc, l, "n:a", "marker") {
			assert.NotEqual(t, "n:other", m.Channel, "a channel never subscribed is not delivered")
		}
	})

	t.Run("EachListenerHasItsOwnConnection", func(t *testing.T) {
		l1, l2 := listen(t), listen(t)
		subscribe(t, l1, "n:both")
		subscribe(t, l2, "n:both")
		require.Eventually(t, func() bool { return subscribers(rc, "n:both") == 2 },
			notifyWait, 10*time.Millisecond, "two listeners are two subscriptions")
		await(t, rc, l1, "n:both", "one")
		await(t, rc, l2, "n:both", "two")
		require.NoError(t, l1.Close())
		require.Eventually(t, func() bool { return subscribers(rc, "n:both") == 1 },
			notifyWait, 10*time.Millisecond, "closing one listener leaves the other subscribed")
		await(t, rc, l2, "n:both", "three")
	})

	t.Run("Unsubscribe", func(t *testing.T) {
		l := listen(t)
		subscribe(t, l, "n:gone", "n:kept")
		await(t, rc, l, "n:gone", "before")
		await(t, rc, l, "n:kept", "before")

		require.NoError(t, l.Unsubscribe(ctx(t), "n:gone"))
		// Unsubscribe may return before the node processed it.
		require.Eventually(t, func() bool { return subscribers(rc, "n:gone") == 0 },
			notifyWait, 10*time.Millisecond, "the node still counts the subscription")
		receivers, err := rc.Publish(ctx(t), "n:gone", "after").Result()
		require.NoError(t, err)
		assert.Zero(t, receivers)
		// One connection delivers in order: a message on n:gone published
		// before the marker would arrive before it.
		for _, m := range await(t, rc, l, "n:kept", "marker") {
			assert.False(t, m.Channel == "n:gone" && m.Payload == "after", "a message arrived after Unsubscribe")
		}

		subscribe(t, l, "n:gone")
		await(t, rc, l, "n:gone", "again")
	})

	t.Run("Close", func(t *testing.T) {
		// Whatever the adapter and the test's clients have started so far
		// stays; the listener's own goroutines must end with Close.
		ignore := goleak.IgnoreCurrent()
		l, err := n.Listen(ctx(t))
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() }) // if the test fails before Close
		subscribe(t, l, "n:close")
		await(t, rc, l, "n:close", "before")

		require.NoError(t, l.Close())
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			for range l.Messages() { //nolint:revive // draining what was buffered
			}
		}()
		select {
		case <-drained:
		case <-time.After(notifyWait):
			t.Fatal("Close did not close Messages()")
		}
		require.Eventually(t, func() bool { return subscribers(rc, "n:close") == 0 },
			notifyWait, 10*time.Millisecond, "Close ends the subscription on the node")

		assert.NotPanics(t, func() { assert.NoError(t, l.Close(), "a second Close") })
		assert.NotPanics(t, func() { assert.Error(t, l.Subscribe(ctx(t), "n:close"), "Subscribe after Close") })
		assert.NotPanics(t, func() { assert.Error(t, l.Unsubscribe(ctx(t), "n:close"), "Unsubscribe after Close") })
		_, open := <-l.Messages()
		assert.False(t, open)
		goleak.VerifyNone(t, ignore)
	})

	t.Run("CloseWhileBusy", func(t *testing.T) {
		ignore := goleak.IgnoreCurrent()
		l, err := n.Listen(ctx(t))
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		subscribe(t, l, "n:busy")
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for i := range 4 {
			wg.Go(func() {
				ch := fmt.Sprintf("n:busy:%d", i)
				for {
					select {
					case <-stop:
						return
					default:
					}
					c, cancel := context.WithTimeout(context.Background(), time.Second)
					_ = l.Subscribe(c, ch)
					_ = l.Unsubscribe(c, ch)
					cancel()
				}
			})
		}
		wg.Go(func() { // a reader, as the lock has
			for range l.Messages() { //nolint:revive // discard
			}
		})
		wg.Go(func() {
			for range 50 {
				if rc.Publish(context.Background(), "n:busy", "x").Err() != nil {
					return
				}
			}
		})
		time.Sleep(50 * time.Millisecond) // let the calls overlap Close; not a speed assertion
		closed := make(chan error, 2)
		go func() { closed <- l.Close() }()
		go func() { closed <- l.Close() }()
		for range 2 {
			require.NoError(t, <-closed, "concurrent Close calls")
		}
		close(stop)
		wg.Wait()
		goleak.VerifyNone(t, ignore)
	})

	t.Run("FullBufferDropsInsteadOfBlocking", func(t *testing.T) {
		l := listen(t)
		subscribe(t, l, "n:flood")
		// Nobody reads Messages() while the node sends more than any buffer.
		pipe := rc.Pipeline()
		for i := range 2000 {
			pipe.Publish(ctx(t), "n:flood", fmt.Sprint("flood-", i))
		}
		_, err := pipe.Exec(ctx(t))
		require.NoError(t, err)
		// The listener still delivers what comes next.
		await(t, rc, l, "n:flood", "after the flood")
	})

	t.Run("CloseWhileNodePaused", func(t *testing.T) {
		srv := redistest.Start(t, redistest.NoPersistence)
		n := s.open(t, srv.URL(), nil).(pool.Notifier)
		l, err := n.Listen(ctx(t))
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		await(t, srv.Client(t), subscribed(t, l, "n:paused"), "n:paused", "before")
		srv.Pause()
		t.Cleanup(srv.Resume) // runs before the pool closes
		closed := make(chan error, 1)
		go func() { closed <- l.Close() }()
		select {
		case err := <-closed:
			require.NoError(t, err)
		case <-time.After(notifyWait):
			t.Fatal("Close waits for a node that does not answer")
		}
	})

	// A node that accepts connections but never answers (SIGSTOPped before
	// the listener connects, or a listener that never reads): Listen,
	// Subscribe, Unsubscribe and Close all return by their bound.
	t.Run("BoundedWhileNodeSilent", func(t *testing.T) {
		for _, silent := range []struct {
			name string
			url  func(t *testing.T) string
		}{
			{"paused", func(t *testing.T) string {
				srv := redistest.Start(t, redistest.NoPersistence)
				srv.Pause()
				t.Cleanup(srv.Resume)
				return srv.URL()
			}},
			{"never reads", func(t *testing.T) string {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				require.NoError(t, err)
				t.Cleanup(func() { ln.Close() })
				return "redis://" + ln.Addr().String()
			}},
		} {
			t.Run(silent.name, func(t *testing.T) {
				n, ok := s.open(t, silent.url(t), nil).(pool.Notifier)
				require.True(t, ok)
				within := func(what string, f func() error) {
					t.Helper()
					done := make(chan struct{})
					go func() { _ = f(); close(done) }()
					select {
					case <-done:
					case <-time.After(time.Second):
						t.Fatalf("%s did not return within 1s on a silent node", what)
					}
				}
				var l pool.Listener
				within("Listen", func() (err error) {
					c, cancel := context.WithTimeout(ctx(t), 100*time.Millisecond)
					defer cancel()
					l, err = n.Listen(c)
					return err
				})
				if l == nil {
					return // refused: bounded, which is all this asks
				}
				for _, op := range []struct {
					name string
					f    func(context.Context, ...string) error
				}{{"Subscribe", l.Subscribe}, {"Unsubscribe", l.Unsubscribe}} {
					within(op.name, func() error {
						c, cancel := context.WithTimeout(ctx(t), 100*time.Millisecond)
						defer cancel()
						return op.f(c, "n:silent")
					})
				}
				within("Close", l.Close)
			})
		}
	})

	t.Run("TLSAndLogin", func(t *testing.T) {
		ca, servers := secureNodes(t, 1)
		srv := servers[0]
		n := s.open(t, srv.URL(user, Secret), ca.ClientConfig()).(pool.Notifier)
		opt, err := redis.ParseURL(srv.URL(user, Secret))
		require.NoError(t, err)
		opt.TLSConfig = ca.ClientConfig()
		rc := redis.NewClient(opt)
		t.Cleanup(func() { _ = rc.Close() })
		l, err := n.Listen(ctx(t))
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		await(t, rc, subscribed(t, l, "n:tls"), "n:tls", "over TLS, logged in")
	})

	t.Run("ResubscribesAfterRestart", func(t *testing.T) {
		srv := redistest.Start(t, redistest.NoPersistence)
		n := s.open(t, srv.URL(), nil).(pool.Notifier)
		rc := srv.Client(t)
		l, err := n.Listen(ctx(t))
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		require.NoError(t, l.Subscribe(ctx(t), "n:r1"))
		await(t, rc, l, "n:r1", "before")

		srv.Restart(t) // kill -9, then a new process on the same port
		await(t, rc, l, "n:r1", "after the restart")

		// Down for longer, with a channel added meanwhile: the listener
		// keeps trying, and subscribes to it once the node is back.
		srv.Kill()
		c, cancel := context.WithTimeout(ctx(t), time.Second)
		_ = l.Subscribe(c, "n:r2") // may fail: the node is down
		cancel()
		srv.Restart(t)
		await(t, rc, l, "n:r1", "after the second restart")
		await(t, rc, l, "n:r2", "subscribed while down")
		require.Eventually(t, func() bool { return subscribers(rc, "n:r1") == 1 && subscribers(rc, "n:r2") == 1 },
			notifyWait, 10*time.Millisecond, "one subscription per channel after reconnecting")
	})

	t.Run("ReportsSubscription", func(t *testing.T) {
		srv := redistest.Start(t, redistest.NoPersistence)
		l := s.open(t, srv.URL(), nil).(pool.Notifier)
		lis, err := l.Listen(ctx(t))
		require.NoError(t, err)
		t.Cleanup(func() { _ = lis.Close() })
		st, ok := lis.(pool.SubscriptionState)
		if !ok {
			t.Skipf("%T does not implement pool.SubscriptionState", lis)
		}
		rc := srv.Client(t)
		subscribed := func(want bool, why string) {
			t.Helper()
			require.Eventually(t, func() bool { return st.Subscribed("n:s") == want }, notifyWait, 5*time.Millisecond, why)
		}
		require.False(t, st.Subscribed("n:s"), "nothing subscribed yet")
		require.NoError(t, lis.Subscribe(ctx(t), "n:s"))
		subscribed(true, "the node confirmed the subscription")
		require.False(t, st.Subscribed("n:other"), "a channel never subscribed")
		srv.Kill()
		subscribed(false, "the connection is gone")
		srv.Restart(t)
		await(t, rc, lis, "n:s", "after the restart")
		subscribed(true, "confirmed again on the new connection")
		require.NoError(t, lis.Unsubscribe(ctx(t), "n:s"))
		subscribed(false, "unsubscribed")
	})

	t.Run("ListenWhileNodeDown", func(t *testing.T) {
		srv := redistest.Start(t, redistest.NoPersistence)
		srv.Kill()
		n := s.open(t, srv.URL(), nil).(pool.Notifier)
		l, err := n.Listen(ctx(t))
		require.NoError(t, err, "a node that is down does not fail Listen: it may come back")
		t.Cleanup(func() { _ = l.Close() })
		c, cancel := context.WithTimeout(ctx(t), time.Second)
		_ = l.Subscribe(c, "n:late") // may fail: the node is down
		cancel()
		srv.Restart(t)
		await(t, srv.Client(t), l, "n:late", "hello")
	})
}

// subscribed subscribes l to channels and returns it. Subscribe may fail
// only while the node is unreachable; await then covers the reconnection.
func subscribed(t *testing.T, l pool.Listener, channels ...string) pool.Listener {
	t.Helper()
	require.NoError(t, l.Subscribe(ctx(t), channels...))
	return l
}

// subscribers returns the smallest number of subscribers the node counts
// for channels, -1 if it cannot tell.
func subscribers(rc *redis.Client, channels ...string) int64 {
	c, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	counts, err := rc.PubSubNumSub(c, channels...).Result()
	if err != nil {
		return -1
	}
	least := int64(-1)
	for _, ch := range channels {
		if n := counts[ch]; least < 0 || n < least {
			least = n
		}
	}
	return least
}

// await publishes payload on channel, again at each poll, until l delivers
// it, and returns every message l delivered meanwhile. Publishing again
// covers a subscription that the node has not yet confirmed and a listener
// that is still reconnecting.
func await(t *testing.T, rc *redis.Client, l pool.Listener, channel, payload string) []pool.Message {
	t.Helper()
	var got []pool.Message
	require.Eventually(t, func() bool {
		c, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = rc.Publish(c, channel, payload).Err() // fails while the node restarts
		cancel()
		for {
			select {
			case m, ok := <-l.Messages():
				if !ok {
					return false
				}
				got = append(got, m)
				if m.Channel == channel && m.Payload == payload {
					return true
				}
			default:
				return false
			}
		}
	}, notifyWait, 50*time.Millisecond, "no message %q on %q", payload, channel)
	return got
}

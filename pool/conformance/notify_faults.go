package conformance

// The Notifier subtests that start a node of their own, to pause, silence,
// secure or restart it.

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
)

// notifyCloseWhileNodePaused checks that Close returns while the node does not
// answer.
func (s *suite) notifyCloseWhileNodePaused(t *testing.T) {
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
}

// notifyBoundedWhileNodeSilent checks a node that accepts connections but
// never answers
// (SIGSTOPped before the listener connects, or a listener that never
// reads): Listen, Subscribe, Unsubscribe and Close all return by their
// bound.
func (s *suite) notifyBoundedWhileNodeSilent(t *testing.T) {
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
}

// notifyTLSAndLogin checks a Listener over TLS, logged in with ACL credentials.
func (s *suite) notifyTLSAndLogin(t *testing.T) {
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
}

// notifyResubscribesAfterRestart checks that a Listener subscribes again to
// its channels, and to one added meanwhile, after the node restarts.
func (s *suite) notifyResubscribesAfterRestart(t *testing.T) {
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
}

// notifyListenWhileNodeDown checks that Listen succeeds on a node that is
// down, and that the Listener delivers once it is back.
func (s *suite) notifyListenWhileNodeDown(t *testing.T) {
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
}

// notifyReportsSubscription checks pool.SubscriptionState, where the
// Listener implements it: a subscription counts once the node confirmed it
// on the connection open now, and no longer once that connection is gone.
func (s *suite) notifyReportsSubscription(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	n := s.open(t, srv.URL(), nil).(pool.Notifier)
	l, err := n.Listen(ctx(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	st, ok := l.(pool.SubscriptionState)
	if !ok {
		t.Skipf("%T does not implement pool.SubscriptionState", l)
	}
	rc := srv.Client(t)
	confirmed := func(want bool, why string) {
		t.Helper()
		require.Eventually(t, func() bool { return st.Subscribed("n:s") == want }, notifyWait, 5*time.Millisecond, why)
	}
	require.False(t, st.Subscribed("n:s"), "nothing subscribed yet")
	require.NoError(t, l.Subscribe(ctx(t), "n:s"))
	confirmed(true, "the node confirmed the subscription")
	require.False(t, st.Subscribed("n:other"), "a channel never subscribed")
	srv.Kill()
	confirmed(false, "the connection is gone")
	srv.Restart(t)
	await(t, rc, l, "n:s", "after the restart")
	confirmed(true, "confirmed again on the new connection")
	require.NoError(t, l.Unsubscribe(ctx(t), "n:s"))
	confirmed(false, "unsubscribed")
}

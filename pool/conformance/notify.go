package conformance

import (
	"context"
	"fmt"
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

	f := &notifyNode{n: n, rc: rc}
	t.Run("Delivers", f.delivers)
	t.Run("EachListenerHasItsOwnConnection", f.eachListenerHasItsOwnConnection)
	t.Run("Unsubscribe", f.unsubscribe)
	t.Run("Close", f.close)
	t.Run("CloseWhileBusy", f.closeWhileBusy)
	t.Run("FullBufferDropsInsteadOfBlocking", f.fullBufferDropsInsteadOfBlocking)
	t.Run("CloseWhileNodePaused", s.notifyCloseWhileNodePaused)
	t.Run("BoundedWhileNodeSilent", s.notifyBoundedWhileNodeSilent)
	t.Run("TLSAndLogin", s.notifyTLSAndLogin)
	t.Run("ResubscribesAfterRestart", s.notifyResubscribesAfterRestart)
	t.Run("ListenWhileNodeDown", s.notifyListenWhileNodeDown)
	t.Run("ReportsSubscription", s.notifyReportsSubscription)
}

// notifyNode is the node testNotifier's first subtests share: the adapter's
// Notifier on it, and a client to publish and count subscribers.
type notifyNode struct {
	n  pool.Notifier
	rc *redis.Client
}

// listen returns a new Listener on the node, closed when t ends.
func (f *notifyNode) listen(t *testing.T) pool.Listener {
	t.Helper()
	l, err := f.n.Listen(ctx(t))
	require.NoError(t, err)
	require.NotNil(t, l)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// subscribe subscribes l to channels, retrying while the node is not
// reachable, until the node counts l among each channel's subscribers.
func (f *notifyNode) subscribe(t *testing.T, l pool.Listener, channels ...string) {
	t.Helper()
	require.NoError(t, l.Subscribe(ctx(t), channels...))
	require.Eventually(t, func() bool {
		return subscribers(f.rc, channels...) >= 1
	}, notifyWait, 10*time.Millisecond, "the node never counted the subscription")
}

// delivers checks that a Listener delivers the messages of its channels, and
// only those.
func (f *notifyNode) delivers(t *testing.T) {
	rc := f.rc
	l := f.listen(t)
	f.subscribe(t, l, "n:a", "n:b")
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
}

// eachListenerHasItsOwnConnection checks that two Listeners are two
// subscriptions, and that closing one leaves the other.
func (f *notifyNode) eachListenerHasItsOwnConnection(t *testing.T) {
	rc := f.rc
	l1, l2 := f.listen(t), f.listen(t)
	f.subscribe(t, l1, "n:both")
	f.subscribe(t, l2, "n:both")
	require.Eventually(t, func() bool { return subscribers(rc, "n:both") == 2 },
		notifyWait, 10*time.Millisecond, "two listeners are two subscriptions")
	await(t, rc, l1, "n:both", "one")
	await(t, rc, l2, "n:both", "two")
	require.NoError(t, l1.Close())
	require.Eventually(t, func() bool { return subscribers(rc, "n:both") == 1 },
		notifyWait, 10*time.Millisecond, "closing one listener leaves the other subscribed")
	await(t, rc, l2, "n:both", "three")
}

// unsubscribe checks that no message of a channel arrives after Unsubscribe,
// and that it can be subscribed again.
func (f *notifyNode) unsubscribe(t *testing.T) {
	rc := f.rc
	l := f.listen(t)
	f.subscribe(t, l, "n:gone", "n:kept")
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

	f.subscribe(t, l, "n:gone")
	await(t, rc, l, "n:gone", "again")
}

// close checks that Close ends the subscription, Messages() and the Listener's
// goroutines, and that calls after it fail without panicking.
func (f *notifyNode) close(t *testing.T) {
	n, rc := f.n, f.rc
	// Whatever the adapter and the test's clients have started so far
	// stays; the listener's own goroutines must end with Close.
	ignore := goleak.IgnoreCurrent()
	l, err := n.Listen(ctx(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() }) // if the test fails before Close
	f.subscribe(t, l, "n:close")
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
}

// closeWhileBusy checks that concurrent Close calls return while Subscribe,
// Unsubscribe, a reader and a publisher are busy, and leave no goroutine.
func (f *notifyNode) closeWhileBusy(t *testing.T) {
	n, rc := f.n, f.rc
	ignore := goleak.IgnoreCurrent()
	l, err := n.Listen(ctx(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	f.subscribe(t, l, "n:busy")
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
}

// fullBufferDropsInsteadOfBlocking checks that a Listener nobody reads still
// delivers after a flood.
func (f *notifyNode) fullBufferDropsInsteadOfBlocking(t *testing.T) {
	rc := f.rc
	l := f.listen(t)
	f.subscribe(t, l, "n:flood")
	// Nobody reads Messages() while the node sends more than any buffer.
	pipe := rc.Pipeline()
	for i := range 2000 {
		pipe.Publish(ctx(t), "n:flood", fmt.Sprint("flood-", i))
	}
	_, err := pipe.Exec(ctx(t))
	require.NoError(t, err)
	// The listener still delivers what comes next.
	await(t, rc, l, "n:flood", "after the flood")
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

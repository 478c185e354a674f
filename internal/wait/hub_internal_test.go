package wait

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/pool"
)

// fakeListener is a node's listener whose subscription is confirmed when
// the test says so (confirm), and whose messages the test sends.
type fakeListener struct {
	msgs      chan pool.Message
	confirmed atomic.Bool
	closeOnce sync.Once
}

func newFakeListener() *fakeListener { return &fakeListener{msgs: make(chan pool.Message, 8)} }

func (l *fakeListener) Subscribe(context.Context, ...string) error   { return nil }
func (l *fakeListener) Unsubscribe(context.Context, ...string) error { return nil }
func (l *fakeListener) Messages() <-chan pool.Message                { return l.msgs }
func (l *fakeListener) Subscribed(string) bool                       { return l.confirmed.Load() }
func (l *fakeListener) Close() error {
	l.closeOnce.Do(func() { close(l.msgs) })
	return nil
}

// fakeNotifier hands out its listener.
type fakeNotifier struct{ l *fakeListener }

func (n fakeNotifier) Listen(context.Context) (pool.Listener, error) { return n.l, nil }

// testHub is a Hub over nodes listeners (nil: a node without notifications)
// whose Stopped joins the last error and the cause.
func testHub(t *testing.T, closing <-chan struct{}, listeners ...*fakeListener) *Hub {
	t.Helper()
	ns := make([]pool.Notifier, len(listeners))
	for i, l := range listeners {
		if l != nil {
			ns[i] = fakeNotifier{l}
		}
	}
	h := &Hub{}
	h.Init(HubConfig{Channel: ChannelPrefix + "ID", Notifiers: ns, Timeout: time.Second, Clock: clock.Real{}, Closing: closing,
		Stopped: func(last, cause error) error { return errors.Join(last, cause) }})
	t.Cleanup(h.Close)
	return h
}

// recorder is an Attempt that fails until the attempt numbered win (0:
// never), and records when each attempt ran and what it was given.
type recorder struct {
	start   time.Time
	win     int
	at      []time.Duration
	watched []bool
	retries []bool
}

var errRefused = errors.New("refused")

func (r *recorder) attempt(_ context.Context, w *Watch, retry bool) (error, bool) {
	r.at = append(r.at, time.Since(r.start))
	r.watched = append(r.watched, w != nil)
	r.retries = append(r.retries, retry)
	if len(r.at) == r.win {
		return nil, true
	}
	return errRefused, !retry
}

// TestRetryHonoursTheStrategy: one attempt, then one per retry of the
// strategy, each its delay after the one before; the last attempt watches
// nothing, since no pause follows it.
func TestRetryHonoursTheStrategy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testHub(t, nil, newFakeListener())
		r := &recorder{start: time.Now()}
		n, err := h.Retry(t.Context(), []string{"k"}, Limit(Func(func(int) (time.Duration, bool) { return 60 * time.Millisecond, true }), 2), time.Millisecond, 0, r.attempt)
		if n != 3 || !errors.Is(err, errRefused) {
			t.Fatalf("Retry = %d, %v; want 3 attempts, the last one's error", n, err)
		}
		want := []time.Duration{0, 60 * time.Millisecond, 120 * time.Millisecond}
		for i, at := range r.at {
			if at != want[i] {
				t.Errorf("attempt %d at %v, want %v (the strategy's delays, on the bubble's clock)", i+1, at, want[i])
			}
		}
		if r.watched[0] != true || r.watched[1] != true || r.watched[2] != false {
			t.Errorf("watched %v, want the attempts followed by a pause to watch, the last not", r.watched)
		}
	})
}

// TestRetryBeatsKeepAPlaceWithoutCountingRetries: with a beat, a pause
// longer than it is cut into beats, each ending in an attempt that is not
// one of the strategy's retries; each attempt's place in the queues lasts
// a beat (and its way), not the pause.
func TestRetryBeatsKeepAPlaceWithoutCountingRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testHub(t, nil, newFakeListener())
		r := &recorder{start: time.Now()}
		var queues []time.Duration
		attempt := func(ctx context.Context, w *Watch, retry bool) (error, bool) {
			queues = append(queues, w.Queue())
			return r.attempt(ctx, w, retry)
		}
		n, err := h.Retry(t.Context(), []string{"k"}, Limit(Func(func(int) (time.Duration, bool) { return time.Hour, true }), 1), time.Millisecond, 25*time.Minute, attempt)
		if n != 2 || !errors.Is(err, errRefused) {
			t.Fatalf("Retry = %d, %v; want 2 attempts of the strategy, the last one's error", n, err)
		}
		if len(r.at) < 4 {
			t.Fatalf("attempts at %v, want beats 25 minutes apart within the hour's pause", r.at)
		}
		for i := 1; i < len(r.at)-1; i++ {
			if d := r.at[i] - r.at[i-1]; d != 25*time.Minute {
				t.Errorf("beat %d came %v after the attempt before, want 25m", i, d)
			}
		}
		for i, q := range queues[:len(queues)-1] {
			if q > 25*time.Minute+2*time.Millisecond+time.Second {
				t.Errorf("attempt %d keeps its place for %v, more than a beat and its way", i+1, q)
			}
		}
		if queues[len(queues)-1] != 0 {
			t.Errorf("the last attempt keeps a place for %v, want none", queues[len(queues)-1])
		}
	})
}

// TestRetryWithoutStrategy is a Try call: one attempt, no watch, no
// listener started.
func TestRetryWithoutStrategy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testHub(t, nil, newFakeListener())
		r := &recorder{start: time.Now()}
		n, err := h.Retry(t.Context(), []string{"k"}, nil, time.Millisecond, 0, r.attempt)
		if n != 1 || !errors.Is(err, errRefused) || r.watched[0] || r.retries[0] {
			t.Fatalf("Retry = %d, %v (watched %v, retry %v); want one attempt without a watch", n, err, r.watched, r.retries)
		}
		if h.Grants.started {
			t.Fatal("a Try call started the listeners")
		}
	})
}

// TestRetryWokenByARelease: a release of a watched key, made here
// (Released) or heard on a node ("free <key>"), cuts the pause short; a
// release of another key does not.
func TestRetryWokenByARelease(t *testing.T) {
	hour := Constant(time.Hour)
	for _, tc := range []struct {
		name string
		wake func(h *Hub, l *fakeListener)
	}{
		{"here", func(h *Hub, _ *fakeListener) { h.Released.Wake([]string{"b"}) }},
		{"heard", func(h *Hub, l *fakeListener) {
			l.msgs <- pool.Message{Channel: h.Grants.Channel(), Payload: wakePrefix + "b"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newFakeListener()
				l.confirmed.Store(true) // no deaf node: only the wake-up may end the pause
				h := testHub(t, nil, l)
				r := &recorder{start: time.Now(), win: 2}
				done := make(chan int)
				go func() {
					n, _ := h.Retry(t.Context(), []string{"a", "b"}, hour, time.Millisecond, 0, r.attempt)
					done <- n
				}()
				synctest.Wait() // the first attempt failed, the pause began
				h.Released.Wake([]string{"other"})
				synctest.Wait()
				if len(r.at) != 1 {
					t.Fatalf("%d attempts after another key's release, want 1", len(r.at))
				}
				tc.wake(h, l)
				if n := <-done; n != 2 || r.at[1] != 0 {
					t.Fatalf("Retry made %d attempts, the second at %v; want it at once on the release", n, r.at[1])
				}
			})
		})
	}
}

// TestRetryCaughtUp: an attempt whose registration went before the node's
// subscription was confirmed is tried again within MaxDeafPoll of the
// confirmation, not at its next retry.
func TestRetryCaughtUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newFakeListener()
		h := testHub(t, nil, l, nil) // node 1 cannot be listened to: never deaf
		r := &recorder{start: time.Now(), win: 2}
		var registered []bool
		attempt := func(ctx context.Context, w *Watch, retry bool) (error, bool) {
			for i := range 2 {
				_, _, ok := w.On(i)
				registered = append(registered, ok)
			}
			return r.attempt(ctx, w, retry)
		}
		done := make(chan int)
		go func() {
			n, _ := h.Retry(t.Context(), []string{"k"}, Constant(time.Hour), time.Millisecond, 0, attempt)
			done <- n
		}()
		synctest.Wait()
		if len(registered) < 2 || !registered[0] || registered[1] {
			t.Fatalf("registered %v, want node 0 (it listens) and not node 1 (no notifications)", registered)
		}
		time.Sleep(time.Second) // deaf polls find nobody listening yet
		synctest.Wait()
		if len(r.at) != 1 {
			t.Fatalf("%d attempts before the confirmation, want 1", len(r.at))
		}
		l.confirmed.Store(true)
		confirmed := time.Since(r.start)
		if n := <-done; n != 2 {
			t.Fatalf("Retry made %d attempts, want 2", n)
		}
		if late := r.at[1] - confirmed; late > MaxDeafPoll {
			t.Fatalf("tried again %v after the confirmation, want within %v", late, MaxDeafPoll)
		}
	})
}

// TestRetryStopped: ctx's end or the Client's closing during a pause ends
// Retry at once with Stopped's error: the last attempt's and the cause.
func TestRetryStopped(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cause error
	}{{"ctx", context.Canceled}, {"closed", ErrClosed}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				closing := make(chan struct{})
				l := newFakeListener()
				l.confirmed.Store(true)
				h := testHub(t, closing, l)
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				r := &recorder{start: time.Now()}
				done := make(chan error)
				go func() {
					_, err := h.Retry(ctx, []string{"k"}, Constant(time.Hour), time.Millisecond, 0, r.attempt)
					done <- err
				}()
				synctest.Wait()
				if tc.cause == ErrClosed {
					close(closing)
				} else {
					cancel()
				}
				err := <-done
				if !errors.Is(err, errRefused) || !errors.Is(err, tc.cause) || time.Since(r.start) != 0 {
					t.Fatalf("Retry = %v after %v, want at once the last error and %v", err, time.Since(r.start), tc.cause)
				}
			})
		})
	}
}

func TestReleasesWatch(t *testing.T) {
	var r Releases
	a, stopA := r.Watch([]string{"x", "y"})
	b, stopB := r.Watch([]string{"y"})
	r.Wake([]string{"y"})
	r.Wake([]string{"y"}) // never blocks: one pending signal is enough
	if len(a) != 1 || len(b) != 1 {
		t.Fatalf("pending %d, %d; want one each", len(a), len(b))
	}
	<-a
	<-b
	stopA()
	r.Wake([]string{"x", "y"})
	if len(a) != 0 || len(b) != 1 {
		t.Fatalf("pending %d, %d after a stopped; want 0, 1", len(a), len(b))
	}
	stopB()
	if len(r.watches) != 0 {
		t.Fatalf("%d keys still watched, want none", len(r.watches))
	}
}

func TestContended(t *testing.T) {
	var c Contended
	now := time.Unix(1000, 0)
	if c.Is("k", now) {
		t.Fatal("a key never marked is contended")
	}
	c.Mark("k", now)
	if !c.Is("k", now.Add(ContendedFor-time.Nanosecond)) || c.Is("k", now.Add(ContendedFor)) {
		t.Fatalf("contended for other than %v", ContendedFor)
	}
	for i := range contendedKeys {
		c.Mark(string(rune('a'+i%26))+time.Duration(i).String(), now)
	}
	c.Mark("late", now.Add(ContendedFor))
	if len(c.until) > contendedKeys {
		t.Fatalf("%d keys remembered, want at most %d once the old ones passed", len(c.until), contendedKeys)
	}
}

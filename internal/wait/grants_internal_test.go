package wait

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/pool"
)

// shardedFake is a listener of a cluster node with sharded pub/sub that
// records the channels it is asked to subscribe and unsubscribe.
type shardedFake struct {
	pool.Listener
	subs, unsubs []string
}

func (f *shardedFake) Sharded() bool { return true }

func (f *shardedFake) SSubscribe(_ context.Context, chs ...string) error {
	f.subs = append(f.subs, chs...)
	return nil
}

func (f *shardedFake) SUnsubscribe(_ context.Context, chs ...string) error {
	f.unsubs = append(f.unsubs, chs...)
	return nil
}

// plainFake is a listener without sharded pub/sub.
type plainFake struct{ pool.Listener }

func TestGrantsHoldShardedChannels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sharded := &shardedFake{}
		g := &Grants{channel: "redlock:grant:ID", byNode: []pool.Listener{sharded, plainFake{}}}
		ch := keyslot.ShardChannel(g.channel, "k")

		chs, done := g.Hold("k", 3)
		if want := []string{ch, g.channel, g.channel}; !slices.Equal(chs, want) {
			t.Fatalf("hold = %q, want %q (sharded on node 0; plain on the plain node and the unopened one)", chs, want)
		}
		_, done2 := g.Hold("k", 3) // the same slot: already subscribed
		if !slices.Equal(sharded.subs, []string{ch}) {
			t.Fatalf("subscribed %q, want %q once", sharded.subs, ch)
		}
		done()
		done()  // done is idempotent
		done2() // nobody holds ch now: it lingers
		if len(sharded.unsubs) != 0 {
			t.Fatalf("unsubscribed %q at once, want the channel to linger", sharded.unsubs)
		}
		_, done3 := g.Hold("k", 3) // a hot key's next waiter: no new subscription
		done3()
		if len(sharded.subs) != 1 {
			t.Fatalf("subscribed %q, want no new subscription while ch lingers", sharded.subs)
		}

		time.Sleep(shardLinger) // fake time in the bubble
		other := keyslot.ShardChannel(g.channel, "another key")
		_, done4 := g.Hold("another key", 3) // a later call sweeps
		defer done4()
		if !slices.Equal(sharded.unsubs, []string{ch}) {
			t.Fatalf("unsubscribed %q after the linger, want %q", sharded.unsubs, ch)
		}
		if !slices.Equal(sharded.subs, []string{ch, other}) {
			t.Fatalf("subscribed %q, want %q then %q", sharded.subs, ch, other)
		}
		_, done5 := g.Hold("k", 3) // swept: subscribed again
		defer done5()
		if !slices.Equal(sharded.subs, []string{ch, other, ch}) {
			t.Fatalf("subscribed %q, want %q again after the sweep", sharded.subs, ch)
		}
	})
}

func TestGrantsOurs(t *testing.T) {
	g := &Grants{channel: "redlock:grant:ID"}
	for ch, want := range map[string]bool{
		"redlock:grant:ID": true,
		keyslot.ShardChannel("redlock:grant:ID", "k"):   true,
		keyslot.ShardChannel("redlock:grant:ID", "{x}"): true,
		"redlock:grant:OTHER":                           false,
		"{a}redlock:grant:OTHER":                        false,
		"x{a}redlock:grant:ID":                          false,
		"{a}b}redlock:grant:ID":                         false,
		"{a}redlock:grant:ID:more":                      false,
	} {
		if got := g.ours(ch); got != want {
			t.Errorf("ours(%q) = %v, want %v", ch, got, want)
		}
	}
}

// TestGrantsDeliverJudged: a grant message reaches the waiter of its
// token, judged by the Hub's health for the waiter's key; a message for a
// token nobody here waits with, or on another channel, is dropped.
func TestGrantsDeliverJudged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newFakeListener()
		unhealthy := errors.New("quarantined")
		ns := []pool.Notifier{fakeNotifier{l}}
		h := &Hub{}
		var mu sync.Mutex
		var judged []string
		h.Init(HubConfig{Channel: ChannelPrefix + "ID", Notifiers: ns, Timeout: time.Second, Clock: clock.Real{},
			Health: func(_ context.Context, i int, key string) error {
				mu.Lock()
				defer mu.Unlock()
				judged = append(judged, key)
				return unhealthy
			}})
		defer h.Close()
		w := New(nil, Config{Clock: clock.Real{}, N: 1, Quorum: 1, Token: "TOKEN", TTL: time.Second})
		h.Grants.Register(w, "k")
		h.Grants.Start()
		synctest.Wait()
		l.msgs <- pool.Message{Channel: ChannelPrefix + "OTHER", Payload: "TOKEN 1"}
		l.msgs <- pool.Message{Channel: h.Grants.Channel(), Payload: "NOBODY 1"}
		l.msgs <- pool.Message{Channel: h.Grants.Channel(), Payload: "TOKEN 3"}
		synctest.Wait()
		select {
		case g := <-w.grants:
			if g.Node != 0 || g.Seq != 3 || !errors.Is(g.Err, unhealthy) {
				t.Fatalf("grant %+v, want node 0 after round 3, judged unhealthy", g)
			}
		default:
			t.Fatal("the grant did not reach its waiter")
		}
		mu.Lock()
		defer mu.Unlock()
		if len(w.grants) != 0 || len(judged) != 1 || judged[0] != "k" {
			t.Fatalf("%d more grants, judged %q; want only ours, judged once for its key", len(w.grants), judged)
		}
		h.Grants.Unregister(w)
		h.Grants.Deliver("TOKEN", 0, 4)
		if len(w.grants) != 0 {
			t.Fatal("a grant reached an unregistered waiter")
		}
	})
}

// TestGrantsSlowHealthOffTheListener: a grant from a node whose health
// reads it (Reads) is judged in a goroutine of its own, bounded by the node
// timeout: Deliver returns at once, the grant reaches the waiter once
// judged, and Close waits for the judgement; after Close such a grant is
// dropped.
func TestGrantsSlowHealthOffTheListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		judging := make(chan struct{})
		var deadline time.Duration
		h := &Hub{}
		h.Init(HubConfig{Channel: ChannelPrefix + "ID", Notifiers: []pool.Notifier{nil, nil}, Timeout: 50 * time.Millisecond,
			Clock: clock.Real{}, Reads: func(i int) bool { return i == 1 },
			Health: func(ctx context.Context, i int, key string) error {
				if i == 1 {
					d, _ := ctx.Deadline()
					deadline = time.Until(d)
					<-judging
				}
				return nil
			}})
		w := New(nil, Config{Clock: clock.Real{}, N: 2, Quorum: 2, Token: "TOKEN", TTL: time.Second})
		h.Grants.Register(w, "k")
		h.Grants.Deliver("TOKEN", 1, 1) // slow: returns at once
		h.Grants.Deliver("TOKEN", 0, 1) // not slow: judged here
		if g := <-w.grants; g.Node != 0 {
			t.Fatalf("first grant from node %d, want node 0's (node 1's is still judged)", g.Node)
		}
		synctest.Wait()
		if deadline != 50*time.Millisecond {
			t.Fatalf("a slow judgement bounded by %v, want the node timeout", deadline)
		}
		closed := make(chan struct{})
		go func() { h.Close(); close(closed) }()
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned while a grant was being judged")
		default:
		}
		close(judging)
		<-closed
		if g := <-w.grants; g.Node != 1 || g.Err != nil {
			t.Fatalf("grant %+v, want node 1's, judged healthy", g)
		}
		h.Grants.Deliver("TOKEN", 1, 2) // after Close: dropped, nothing started
		synctest.Wait()
		if len(w.grants) != 0 {
			t.Fatal("a slow grant after Close reached the waiter")
		}
	})
}

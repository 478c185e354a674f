package wait

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

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

package shardlisten_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redlockgo/redlock/pool/internal/shardlisten"
)

var errClosed = errors.New("closed")

// fakeShard is a shard that confirms every subscription at once.
type fakeShard struct {
	addr   string
	mu     sync.Mutex
	chs    map[string]bool
	closed bool
}

// Subscribed implements shardlisten.Shard.
func (f *fakeShard) Subscribed(ch string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.chs[ch]
}

// Wants implements shardlisten.Shard.
func (f *fakeShard) Wants() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for ch := range f.chs {
		out = append(out, ch)
	}
	return out
}

// subscribe asks for ch, confirmed at once.
func (f *fakeShard) subscribe(ch string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.chs[ch] = true
}

// Unsubscribe implements shardlisten.Shard.
func (f *fakeShard) Unsubscribe(_ context.Context, chs ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range chs {
		delete(f.chs, ch)
	}
	return nil
}

// isClosed reports whether Close was called.
func (f *fakeShard) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// Close implements shardlisten.Shard.
func (f *fakeShard) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

// cluster is the transport of a Set under test: a slot map by channel and
// the shards opened.
type cluster struct {
	set     *shardlisten.Set[*fakeShard]
	mu      sync.Mutex
	sharded bool
	known   bool
	owner   map[string]string
	opened  []*fakeShard
}

// newCluster returns a cluster whose Set is started, and closed at the
// test's end.
func newCluster(t *testing.T) *cluster { return newClusterKnown(t, true) }

// newClusterKnown is newCluster whose probe answers known until told
// otherwise: false makes the first probes unanswered.
func newClusterKnown(t *testing.T, known bool) *cluster {
	t.Helper()
	c := &cluster{sharded: true, known: known, owner: map[string]string{}}
	c.set = shardlisten.New(shardlisten.Config[*fakeShard]{
		Probe: func(context.Context) (bool, bool) {
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.sharded, c.known
		},
		NewShard: func(addr string) *fakeShard {
			s := &fakeShard{addr: addr, chs: map[string]bool{}}
			c.mu.Lock()
			c.opened = append(c.opened, s)
			c.mu.Unlock()
			return s
		},
		Place:  c.place,
		Closed: errClosed,
	})
	c.set.Start()
	t.Cleanup(c.set.Close)
	return c
}

// place claims each pending channel on its owner, and confirms it there.
func (c *cluster) place(_ context.Context, pending []string) bool {
	for _, ch := range pending {
		c.mu.Lock()
		addr := c.owner[ch]
		c.mu.Unlock()
		s, ok := c.set.Claim(ch, addr)
		if ok && s == nil {
			return false
		}
		if ok {
			s.subscribe(ch)
		}
	}
	return true
}

// shards returns the shards opened so far, in order.
func (c *cluster) shards() []*fakeShard {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.opened)
}

// move gives ch's slot to the master at addr.
func (c *cluster) move(ch, addr string) {
	c.mu.Lock()
	c.owner[ch] = addr
	c.mu.Unlock()
}

func TestSetPlacesAndFollowsAMove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.move("a", "n1")
		c.move("b", "n1")
		if err := c.set.SSubscribe(t.Context(), "a", "b"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !c.set.Sharded() || !c.set.Subscribed("a") || !c.set.Subscribed("b") {
			t.Fatalf("sharded %v, a %v, b %v: want all true", c.set.Sharded(), c.set.Subscribed("a"), c.set.Subscribed("b"))
		}
		n1 := c.shards()[0]

		c.move("a", "n2")
		n1.Unsubscribe(t.Context(), "a") // the shard dropped it: the slot moved
		c.set.Refused("")
		synctest.Wait()
		if got := c.shards(); len(got) != 2 || !got[1].Subscribed("a") || n1.Subscribed("a") || !c.set.Subscribed("a") {
			t.Fatalf("a not moved to n2: %d shards opened", len(got))
		}

		if err := c.set.SUnsubscribe(t.Context(), "b"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !n1.isClosed() {
			t.Fatalf("n1 left without channels is not closed")
		}
		if c.set.Subscribed("b") {
			t.Fatalf("b still subscribed after SUnsubscribe")
		}
	})
}

func TestSetPrunesAChannelLeftOnItsOldShard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.move("a", "n1")
		c.move("b", "n1")
		_ = c.set.SSubscribe(t.Context(), "a", "b")
		synctest.Wait()
		n1 := c.shards()[0]

		c.move("a", "n2")
		c.set.Refused("MOVED 1 n2") // n1 still has a; n2 must take it over
		n1.mu.Lock()
		n1.chs["a"] = false // refused: not confirmed any more
		n1.mu.Unlock()
		c.set.Poke()
		synctest.Wait()
		if got := n1.Wants(); len(got) != 1 || got[0] != "b" || n1.isClosed() {
			t.Fatalf("n1 wants %v (closed %v), want [b] and open", got, n1.isClosed())
		}
	})
}

func TestSetUnknownCommandTurnsShardedOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		synctest.Wait()
		if !c.set.Sharded() {
			t.Fatal("not sharded after the probe")
		}
		c.set.Refused("ERR unknown command 'SSUBSCRIBE'")
		if c.set.Sharded() {
			t.Fatal("still sharded after an unknown command")
		}
		c.move("a", "n1")
		_ = c.set.SSubscribe(t.Context(), "a")
		synctest.Wait()
		if got := c.shards(); len(got) != 0 {
			t.Fatalf("%d shards opened with sharded off, want none", len(got))
		}
	})
}

func TestSetProbesAgainUntilAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newClusterKnown(t, false) // unanswered from the first probe: Start probes at once
		synctest.Wait()
		if c.set.Sharded() {
			t.Fatal("sharded before the probe answered")
		}
		c.mu.Lock()
		c.known = true
		c.mu.Unlock()
		time.Sleep(shardlisten.PlaceEvery) // fake time inside the bubble
		synctest.Wait()
		if !c.set.Sharded() {
			t.Fatal("not sharded after the probe answered")
		}
	})
}

func TestSetAfterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.move("a", "n1")
		_ = c.set.SSubscribe(t.Context(), "a")
		synctest.Wait()
		c.set.Close()
		if !c.shards()[0].isClosed() {
			t.Fatal("shard open after Close")
		}
		if err := c.set.SSubscribe(t.Context(), "b"); !errors.Is(err, errClosed) {
			t.Fatalf("SSubscribe after Close: %v, want the Closed error", err)
		}
		if err := c.set.SUnsubscribe(t.Context(), "a"); !errors.Is(err, errClosed) {
			t.Fatalf("SUnsubscribe after Close: %v, want the Closed error", err)
		}
	})
}

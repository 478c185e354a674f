package redlock

import (
	"cmp"
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/wait"
	"github.com/redlockgo/redlock/pool"
)

// grants delivers to a Client's waiters the grants that the nodes' queues
// make them. A release on a node hands the key to the first waiter there and
// publishes "<token> <seq>" on the channel of that waiter's Client
// (grantChannelPrefix and its id), where the Client listens: one subscription per node per
// Client, made once, whatever the keys. The releasing Client also reads the
// grant from its release's reply and delivers it directly when the waiter is
// its own, without the round trip through pub/sub.
//
// Nothing here is on the path of a call that promises a bound: listeners
// are opened and subscribed in goroutines of their own, which Close ends.
// A node that cannot be listened to (down, or a Pool without
// pool.Notifier) only costs its grants' messages: waiters learn them at
// their next round.
//
// The same channel carries the wake-ups of the Client's blocked LockAll,
// RLock and AcquirePermit calls (watch.go): "free <key>", passed to woken.
type grants struct {
	channel string
	health  func(ctx context.Context, i int, key string) error // why node i's grants do not count now (vote.go), or nil
	reads   func(i int) bool                                   // whether health does I/O for node i (node.Set.HealthReads)
	woken   *releases                                          // the Client's calls waiting for a key to be free

	mu      sync.Mutex
	inbox   map[string]inboxEntry // by token
	started bool
	closed  bool
	cancel  context.CancelFunc
	open    []pool.Listener
	byNode  []pool.Listener // node i's listener once open; nil before and after
	held    []shardHolds    // node i's sharded channels (take)
	timeout time.Duration   // the node timeout, which bounds the listeners' I/O
	readers sync.WaitGroup
	checks  sync.WaitGroup // grants judged in goroutines of their own (deliver)
}

// inboxEntry is a waiter and its lock key, which a node's health may read
// (a cluster node's shard).
type inboxEntry struct {
	w   *wait.Waiter
	key string
}

// grantChannelPrefix begins the channel of a Client's grants; the Client's
// random id follows.
const grantChannelPrefix = "redlock:grant:"

// register makes w, a waiter for key, reachable by the grants for its
// token.
func (g *grants) register(w *wait.Waiter, key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inbox == nil {
		g.inbox = make(map[string]inboxEntry)
	}
	g.inbox[w.Token()] = inboxEntry{w: w, key: key}
}

// unregister forgets w.
func (g *grants) unregister(w *wait.Waiter) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.inbox, w.Token())
}

// deliver passes a grant of node i, after round seq, to the waiter with
// token, if it waits in this Client. It never blocks: a grant whose health
// reads the node (a cluster node's shard, node.Set.HealthReads) is judged
// in a goroutine of its own, bounded by the node timeout, which close
// waits for.
func (g *grants) deliver(token string, i, seq int) {
	g.mu.Lock()
	e, ok := g.inbox[token]
	slow := ok && g.health != nil && g.reads != nil && g.reads(i)
	closed := g.closed
	if slow && !closed {
		g.checks.Add(1) // under mu, before close sets closed: close's Wait follows every Add
	}
	timeout := g.timeout
	g.mu.Unlock()
	switch {
	case !ok || slow && closed:
		return // no waiter here, or the Client is closing: its waiters end
	case slow:
		go func() {
			defer g.checks.Done()
			ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(timeout, MaxNodeTimeout))
			defer cancel()
			e.w.Deliver(wait.Grant{Node: i, Seq: seq, Err: g.health(ctx, i, e.key)})
		}()
		return
	}
	var err error
	if g.health != nil {
		err = g.health(context.Background(), i, e.key) // no I/O: not slow
	}
	e.w.Deliver(wait.Grant{Node: i, Seq: seq, Err: err})
}

// start opens the listeners, once: one goroutine per node that supports
// notifications.
func (g *grants) start(pools []pool.Pool, subscribeTimeout time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.started || g.closed {
		return
	}
	g.started = true
	g.timeout = subscribeTimeout
	g.byNode = make([]pool.Listener, len(pools))
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	for i, p := range pools {
		n, ok := p.(pool.Notifier)
		if !ok {
			continue
		}
		g.readers.Add(1)
		go func() {
			defer g.readers.Done()
			g.listen(ctx, i, n, subscribeTimeout)
		}()
	}
}

// listen opens node i's listener, subscribes to the Client's channel and
// delivers what it hears until the listener is closed.
func (g *grants) listen(ctx context.Context, i int, n pool.Notifier, timeout time.Duration) {
	l, err := n.Listen(ctx)
	if err != nil {
		return
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		_ = l.Close()
		return
	}
	g.open = append(g.open, l)
	g.byNode[i] = l
	g.mu.Unlock()
	sctx, cancel := context.WithTimeout(ctx, timeout)
	_ = l.Subscribe(sctx, g.channel) // the listener subscribes again on reconnect
	cancel()
	for m := range l.Messages() {
		if !g.ours(m.Channel) {
			continue
		}
		if key, ok := strings.CutPrefix(m.Payload, wakePrefix); ok {
			if g.woken != nil {
				g.woken.wake([]string{key})
			}
			continue
		}
		token, s, _ := strings.Cut(m.Payload, " ")
		if seq, err := strconv.Atoi(s); err == nil {
			g.deliver(token, i, seq)
		}
	}
}

// hold returns the channel on which this Client hears the grants and
// wake-ups of key on each node, for a call to register there. On a node
// whose listener has sharded pub/sub (a Redis 7 cluster) it is the
// Client's channel in key's slot (keyslot.ShardChannel), which the scripts
// publish to with SPUBLISH, so that only the shard that owns the key sends
// it, and only this Client's connection to that shard receives it: the
// listener subscribes to it while a call holds it (until done), and for a
// while after (take).
// Elsewhere it is the Client's channel, heard on one connection per node.
// hold does no I/O: the listener subscribes in the background, as it does
// the Client's channel.
func (g *grants) hold(key string, nodes int) (channels []string, done func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	channels = make([]string, nodes)
	var sharded []int
	for i := range channels {
		channels[i] = g.channel
		if sl, ok := g.listener(i).(pool.ShardedListener); ok && sl.Sharded() {
			channels[i] = keyslot.ShardChannel(g.channel, key)
			g.take(i, sl, channels[i], 1)
			sharded = append(sharded, i)
		}
	}
	if len(sharded) == 0 {
		return channels, func() {}
	}
	var once sync.Once
	return channels, func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			for _, i := range sharded {
				if sl, ok := g.listener(i).(pool.ShardedListener); ok {
					g.take(i, sl, channels[i], -1)
				}
			}
		})
	}
}

// listener returns node i's listener, or nil. g.mu is held.
func (g *grants) listener(i int) pool.Listener {
	if i < len(g.byNode) {
		return g.byNode[i]
	}
	return nil
}

// take counts delta holders of node i's sharded channel ch, subscribing on
// the first. A channel nobody holds stays subscribed for shardLinger, so
// that the next wait on a key of its slot (a hot key's next waiter) finds
// it confirmed, and is unsubscribed by a later take once that has passed.
// g.mu is held: the listener's calls only record the change (no I/O), and
// their order is the holders'.
func (g *grants) take(i int, l pool.ShardedListener, ch string, delta int) {
	if len(g.held) <= i {
		g.held = append(g.held, make([]shardHolds, i+1-len(g.held))...)
	}
	h := &g.held[i]
	if h.count == nil {
		h.count, h.idle = make(map[string]int), make(map[string]time.Time)
	}
	now := time.Now()
	_, subscribed := h.count[ch]
	n := h.count[ch] + delta
	h.count[ch] = max(n, 0)
	switch {
	case n > 0:
		delete(h.idle, ch)
		if !subscribed {
			// The listener subscribes in the background, each step bounded
			// by the node timeout; nothing here waits.
			ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(g.timeout, time.Second))
			_ = l.SSubscribe(ctx, ch)
			cancel()
		}
	default:
		h.idle[ch] = now
	}
	if now.Sub(h.swept) < shardLinger {
		return
	}
	h.swept = now
	for c, since := range h.idle {
		if now.Sub(since) >= shardLinger {
			delete(h.idle, c)
			delete(h.count, c)
			_ = l.SUnsubscribe(context.Background(), c)
		}
	}
}

// shardHolds are a node's sharded channels: how many calls hold each,
// since when each nobody holds, and when those were last swept.
type shardHolds struct {
	count map[string]int
	idle  map[string]time.Time
	swept time.Time
}

// shardLinger is how long a sharded channel nobody holds stays subscribed.
const shardLinger = time.Minute

// ours reports whether ch is the Client's channel, plain or sharded.
func (g *grants) ours(ch string) bool {
	if ch == g.channel {
		return true
	}
	rest, ok := strings.CutSuffix(ch, "}"+g.channel)
	return ok && strings.HasPrefix(rest, "{") && !strings.Contains(rest[1:], "}")
}

// listening reports whether node i confirmed the subscription to ch (one
// of hold's channels) on the connection open now: a release there will be
// heard. Only listeners that implement pool.SubscriptionState can tell.
func (g *grants) listening(i int, ch string) bool {
	g.mu.Lock()
	l := g.listener(i)
	g.mu.Unlock()
	st, ok := l.(pool.SubscriptionState)
	return ok && st.Subscribed(ch)
}

// close ends the listeners and waits for their goroutines.
func (g *grants) close() {
	g.mu.Lock()
	g.closed = true
	if g.cancel != nil {
		g.cancel()
	}
	open := g.open
	g.open, g.byNode = nil, nil
	g.mu.Unlock()
	var closing sync.WaitGroup // in parallel: one node's Close never delays another's
	for _, l := range open {
		closing.Go(func() { _ = l.Close() })
	}
	closing.Wait()
	g.readers.Wait()
	g.checks.Wait()
}

package wait

import (
	"cmp"
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redlockgo/redlock/pool"
)

// Grants delivers to a Client's waiters the grants that the nodes' queues
// make them. A release on a node hands the key to the first waiter there and
// publishes "<token> <seq>" on the channel of that waiter's Client
// (ChannelPrefix and its id), where the Client listens: one subscription per node per
// Client, made once, whatever the keys. The releasing Client also reads the
// grant from its release's reply and passes it to Deliver when the waiter is
// its own, without the round trip through pub/sub.
//
// Nothing here is on the path of a call that promises a bound: listeners
// are opened and subscribed in goroutines of their own, which Close ends.
// A node that cannot be listened to (down, or a Pool without
// pool.Notifier) only costs its grants' messages: waiters learn them at
// their next round.
//
// The same channel carries the wake-ups of the Client's blocked calls that
// retry (watch.go): "free <key>", passed to the Releases it was built with.
type Grants struct {
	channel   string
	notifiers []pool.Notifier // node i's notification API, nil where it has none
	health    Health
	reads     func(i int) bool // whether health does I/O for node i: judge its grants off the listener (HubConfig.Reads)
	woken     *Releases        // the Client's calls waiting for a key to be free

	mu      sync.Mutex
	inbox   map[string]inboxEntry // by token
	started bool
	closed  bool
	cancel  context.CancelFunc
	open    []pool.Listener
	byNode  []pool.Listener // node i's listener once open; nil before and after
	held    []shardHolds    // node i's sharded channels (take)
	timeout time.Duration   // the node timeout, which bounds the listeners' I/O (HubConfig)
	readers sync.WaitGroup
	checks  sync.WaitGroup // grants judged in goroutines of their own (Deliver)
}

// Health returns why node i's grant to a waiter on key does not count now
// (the redlock package's one judge, vote.go), or nil when it counts.
type Health func(ctx context.Context, i int, key string) error

// inboxEntry is a waiter and its lock key, which a node's health may read.
type inboxEntry struct {
	w   *Waiter
	key string
}

// ChannelPrefix begins the channel of a Client's grants; the Client's
// random id follows.
const ChannelPrefix = "redlock:grant:"

// wakePrefix begins the message that tells a watching Client its key is
// free; the key follows. Grants never begin with it: a token is upper case.
const wakePrefix = "free "

// Channel returns the Client's channel.
func (g *Grants) Channel() string { return g.channel }

// CanListen reports whether node i has a notification API: a registration
// there can be heard.
func (g *Grants) CanListen(i int) bool { return i < len(g.notifiers) && g.notifiers[i] != nil }

// Register makes w, a waiter for key, reachable by the grants for its
// token.
func (g *Grants) Register(w *Waiter, key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inbox == nil {
		g.inbox = make(map[string]inboxEntry)
	}
	g.inbox[w.Token()] = inboxEntry{w: w, key: key}
}

// Unregister forgets w.
func (g *Grants) Unregister(w *Waiter) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.inbox, w.Token())
}

// Deliver passes a grant of node i, after round seq, to the waiter with
// token, if it waits in this Client, judged by the health the Grants were
// built with. It never blocks: a grant whose health reads the node (a
// cluster node's shard, HubConfig.Reads) is judged in a goroutine of its
// own, bounded by the node timeout, which Close waits for.
func (g *Grants) Deliver(token string, i, seq int) {
	g.mu.Lock()
	e, ok := g.inbox[token]
	slow := ok && g.health != nil && g.reads != nil && g.reads(i)
	closed := g.closed
	if slow && !closed {
		g.checks.Add(1) // under mu, before Close sets closed: Close's Wait follows every Add
	}
	g.mu.Unlock()
	switch {
	case !ok || slow && closed:
		return // no waiter here, or the Client is closing: its waiters end
	case slow:
		go func() {
			defer g.checks.Done()
			ctx, cancel := context.WithTimeout(context.Background(), g.subscribeTimeout())
			defer cancel()
			e.w.Deliver(Grant{Node: i, Seq: seq, Err: g.health(ctx, i, e.key)})
		}()
		return
	}
	var err error
	if g.health != nil {
		err = g.health(context.Background(), i, e.key) // no I/O: not slow
	}
	e.w.Deliver(Grant{Node: i, Seq: seq, Err: err})
}

// Start opens the listeners, once: one goroutine per node that has a
// notification API, each step of its I/O bounded by the Hub's timeout.
func (g *Grants) Start() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.started || g.closed {
		return
	}
	g.started = true
	timeout := g.timeout
	g.byNode = make([]pool.Listener, len(g.notifiers))
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	for i, n := range g.notifiers {
		if n == nil {
			continue
		}
		g.readers.Add(1)
		go func() {
			defer g.readers.Done()
			g.listen(ctx, i, n, timeout)
		}()
	}
}

// listen opens node i's listener, subscribes to the Client's channel and
// delivers what it hears until the listener is closed.
func (g *Grants) listen(ctx context.Context, i int, n pool.Notifier, timeout time.Duration) {
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
		if g.ours(m.Channel) {
			g.heard(i, m.Payload)
		}
	}
}

// heard handles a message of node i on the Client's channel: a wake-up, or
// a grant.
func (g *Grants) heard(i int, payload string) {
	if key, ok := strings.CutPrefix(payload, wakePrefix); ok {
		if g.woken != nil {
			g.woken.Wake([]string{key})
		}
		return
	}
	token, s, _ := strings.Cut(payload, " ")
	if seq, err := strconv.Atoi(s); err == nil {
		g.Deliver(token, i, seq)
	}
}

// listener returns node i's listener, or nil. g.mu is held.
func (g *Grants) listener(i int) pool.Listener {
	if i < len(g.byNode) {
		return g.byNode[i]
	}
	return nil
}

// Listening reports whether node i confirmed the subscription to ch (one
// of Hold's channels) on the connection open now: a release there will be
// heard. Only listeners that implement pool.SubscriptionState can tell. It
// does no I/O.
func (g *Grants) Listening(i int, ch string) bool {
	g.mu.Lock()
	l := g.listener(i)
	g.mu.Unlock()
	st, ok := l.(pool.SubscriptionState)
	return ok && st.Subscribed(ch)
}

// ShardedNodes returns how many of the listeners open so far found sharded
// pub/sub on their node (a Redis 7 cluster).
func (g *Grants) ShardedNodes() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, l := range g.byNode {
		if sl, ok := l.(pool.ShardedListener); ok && sl.Sharded() {
			n++
		}
	}
	return n
}

// Close ends the listeners and waits for their goroutines.
func (g *Grants) Close() {
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

// subscribeTimeout bounds a step of the listeners' I/O (a sharded
// subscription, a slow grant's judgement): the node timeout, or a second
// when it is not known (a test's Grants).
func (g *Grants) subscribeTimeout() time.Duration { return cmp.Or(g.timeout, time.Second) }

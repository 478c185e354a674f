package redlock

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

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
	counts  func(i int) bool // whether node i's grants count (quarantine.go)
	woken   *releases        // the Client's calls waiting for a key to be free

	mu      sync.Mutex
	inbox   map[string]*waiter // by token
	started bool
	closed  bool
	cancel  context.CancelFunc
	open    []pool.Listener
	byNode  []pool.Listener // node i's listener once open; nil before and after
	readers sync.WaitGroup
}

// grantChannelPrefix begins the channel of a Client's grants; the Client's
// random id follows.
const grantChannelPrefix = "redlock:grant:"

// register makes w reachable by the grants for its token.
func (g *grants) register(w *waiter) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inbox == nil {
		g.inbox = make(map[string]*waiter)
	}
	g.inbox[w.token] = w
}

// unregister forgets w.
func (g *grants) unregister(w *waiter) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.inbox, w.token)
}

// deliver passes a grant of node i, after round seq, to the waiter with
// token, if it waits in this Client. It never blocks.
func (g *grants) deliver(token string, i, seq int) {
	g.mu.Lock()
	w := g.inbox[token]
	g.mu.Unlock()
	if w != nil && (g.counts == nil || g.counts(i)) {
		w.deliver(i, seq)
	}
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
		if m.Channel != g.channel {
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

// listening reports whether node i confirmed the subscription to the
// Client's channel on the connection open now: a release there will be
// heard. Only listeners that implement pool.SubscriptionState can tell.
func (g *grants) listening(i int) bool {
	g.mu.Lock()
	var l pool.Listener
	if i < len(g.byNode) {
		l = g.byNode[i]
	}
	g.mu.Unlock()
	st, ok := l.(pool.SubscriptionState)
	return ok && st.Subscribed(g.channel)
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
}

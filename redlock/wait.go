package redlock

import (
	"context"
	"math/bits"
	"strings"
	"sync"
	"time"

	"github.com/redlockgo/redlock/pool"
)

// ReleaseChannel returns the Redis pub/sub channel on which Unlock announces
// that key was released: "redlock:released:" + key. The message is the
// releasing Client's random id, followed, for a lock taken WithFairness, by
// a space and the id of the waiter first in that node's queue.
func ReleaseChannel(key string) string { return channelPrefix + key }

const channelPrefix = "redlock:released:"

// waiters is a Client's queue of Lock calls waiting for each key, and its
// subscriptions to release announcements.
//
// Within a Client only the head of a key's queue makes attempts; the others
// wait to be promoted, in arrival order. So a release wakes at most one
// waiter per Client (no thundering herd), and a Client's own callers get the
// lock first-come first-served instead of whoever retries at the right
// moment. A release is announced by Unlock on every node it releases;
// waiters of other Clients hear it through one subscription connection per
// node per Client, opened when the first waiter arrives; the Client's own
// head is woken, or handed the lock (handover.go), directly. Expiry
// announces nothing and messages can be lost, so the head also retries after
// the retry strategy's backoff.
type waiters struct {
	c *Client

	mu     sync.Mutex
	queues map[string][]*waiter

	subMu      sync.Mutex // serialises subscription changes; taken before mu
	subscribed map[string]bool
	listeners  []pool.Listener // opened once, on the first waiter
	opened     bool
	need       int            // messages from distinct nodes that wake a head; under mu
	readers    sync.WaitGroup // the listeners' goroutines; Add and Wait under subMu
}

type waiter struct {
	wake chan struct{} // buffered: a pending signal is never lost, never doubled
	// handoff is set (under waiters.mu) when w became head because the head
	// before it got the lock, valid until handoff: w should wait for that
	// lock's Unlock, which wakes it, not try at once. Zero otherwise.
	handoff time.Time
	// ticket is the id of w's fair ticket, "" without WithFairness.
	ticket string
	// A waiter that can take a lock handed over by Unlock (not fair, not
	// fenced) parks while the holder before it is expected to unlock;
	// Unlock then offers it the lock (under waiters.mu).
	canTake bool
	ttl     time.Duration // the lock it asks for, in whole milliseconds
	heal    bool
	parked  bool
	offer   *offer
	// heard has bit i set when node i announced a release of the key since
	// w was last woken (under waiters.mu).
	heard uint64
}

func (w *waiter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// busy reports whether callers of this Client already wait for key; a new
// caller then queues behind them instead of barging in.
func (ws *waiters) busy(key string) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.queues[key]) > 0
}

// join queues a new waiter for key, asking for ttl with lc, and makes sure
// the key's release channel is subscribed on every node that supports it.
func (ws *waiters) join(ctx context.Context, key string, ttl time.Duration, lc lockConfig) *waiter {
	w := &waiter{wake: make(chan struct{}, 1), ttl: ttl.Truncate(time.Millisecond), heal: lc.heal,
		canTake: !lc.fencing && lc.ticket == nil}
	if lc.ticket != nil {
		w.ticket = lc.ticket.id
	}
	ws.mu.Lock()
	if ws.queues == nil {
		ws.queues = make(map[string][]*waiter)
	}
	ws.queues[key] = append(ws.queues[key], w)
	ws.mu.Unlock()
	ws.sync(ctx, key)
	return w
}

// head reports whether w is first in key's queue.
func (ws *waiters) head(key string, w *waiter) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	q := ws.queues[key]
	return len(q) > 0 && q[0] == w
}

// leave removes w from key's queue, promotes the next waiter if w was the
// head, and unsubscribes when nobody waits any more. until is the validity
// of the lock w leaves with, zero when it gave up.
func (ws *waiters) leave(ctx context.Context, key string, w *waiter, until time.Time) {
	ws.mu.Lock()
	q := ws.queues[key]
	for i, x := range q {
		if x == w {
			q = append(q[:i:i], q[i+1:]...)
			if i == 0 && len(q) > 0 {
				q[0].handoff = until
				// Parked from now on, before its goroutine even runs: our
				// caller may unlock at once.
				q[0].parked = q[0].canTake && !until.IsZero()
				q[0].signal()
			}
			break
		}
	}
	if len(q) == 0 {
		delete(ws.queues, key)
	} else {
		ws.queues[key] = q
	}
	ws.mu.Unlock()
	ws.sync(ctx, key)
}

// wakeHead signals the first waiter for key: the lock was just released.
func (ws *waiters) wakeHead(key string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if q := ws.queues[key]; len(q) > 0 {
		q[0].handoff = time.Time{}
		q[0].heard = 0
		q[0].signal()
	}
}

// heardFrom records that node i announced a release of key (by another
// Client), and wakes the head once a majority of the nodes (or every node
// that can announce, if fewer) have since it was last woken. An attempt on
// the first message would race the releaser's deletes to the other nodes,
// and fail where it finds the old token. next names the fair waiter first
// in the node's queue, if any: a fair head that is not next ignores the
// message, so that a release wakes one waiter across all Clients.
func (ws *waiters) heardFrom(key string, i int, next string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	q := ws.queues[key]
	if len(q) == 0 {
		return
	}
	w := q[0]
	if next != "" && w.ticket != "" && next != w.ticket {
		return
	}
	if i < 64 {
		w.heard |= 1 << i
	}
	if i >= 64 || bits.OnesCount64(w.heard) >= ws.need {
		w.handoff = time.Time{}
		w.heard = 0
		w.signal()
	}
}

// notified reports whether release messages reach this Client from a
// majority of the nodes.
func (ws *waiters) notified() bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.need >= ws.c.quorum
}

// offer is a lock Unlock is handing over to a parked waiter. done is closed
// once lock (nil if the hand-over failed, with err) is final.
type offer struct {
	ttl  time.Duration
	heal bool
	done chan struct{}
	lock *Lock
	err  error
}

// park marks w, the head, as waiting for the holder's Unlock, which may then
// hand it the lock.
func (ws *waiters) park(w *waiter) {
	ws.mu.Lock()
	w.parked = w.canTake
	ws.mu.Unlock()
}

// unpark ends w's parking and returns the offer made meanwhile, if any; the
// waiter must then wait for it to be done.
func (ws *waiters) unpark(w *waiter) *offer {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w.parked = false
	o := w.offer
	w.offer = nil
	return o
}

// offerHead makes an offer to key's head waiter if it is parked, or
// returns nil.
func (ws *waiters) offerHead(key string) *offer {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	q := ws.queues[key]
	if len(q) == 0 || !q[0].parked {
		return nil
	}
	w := q[0]
	w.parked = false
	w.handoff = time.Time{}
	w.offer = &offer{ttl: w.ttl, heal: w.heal, done: make(chan struct{})}
	return w.offer
}

// takeHandoff returns, and clears, the validity of the lock held by the
// head that promoted w, if no release has been heard since; zero otherwise.
func (ws *waiters) takeHandoff(w *waiter) time.Time {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	h := w.handoff
	w.handoff = time.Time{}
	return h
}

// sync subscribes to or unsubscribes from key's release channel so that the
// subscription matches whether anyone waits. Node errors only cost a wake-up:
// the backoff covers them.
func (ws *waiters) sync(ctx context.Context, key string) {
	ws.subMu.Lock()
	defer ws.subMu.Unlock()
	ws.mu.Lock()
	want := len(ws.queues[key]) > 0
	ws.mu.Unlock()
	if ws.subscribed[key] == want {
		return
	}
	if want && !ws.opened {
		ws.open(ctx)
	}
	if ws.subscribed == nil {
		ws.subscribed = make(map[string]bool)
	}
	ctx = context.WithoutCancel(ctx)
	ch := ReleaseChannel(key)
	for _, l := range ws.listeners {
		nctx, cancel := context.WithTimeout(ctx, ws.c.nodeTimeout(0))
		if want {
			_ = l.Subscribe(nctx, ch)
		} else {
			_ = l.Unsubscribe(nctx, ch)
		}
		cancel()
	}
	if want {
		ws.subscribed[key] = true
	} else {
		delete(ws.subscribed, key)
	}
}

// open starts one listener per node that supports notifications, each with
// a goroutine that wakes the head waiter of the key a message names. Close
// ends them.
func (ws *waiters) open(ctx context.Context) {
	ws.opened = true
	ws.c.mu.RLock()
	closed := ws.c.closed
	ws.c.mu.RUnlock()
	if closed {
		return
	}
	for i, p := range ws.c.pools {
		n, ok := p.(pool.Notifier)
		if !ok {
			continue
		}
		l, err := n.Listen(context.WithoutCancel(ctx))
		if err != nil {
			continue
		}
		ws.listeners = append(ws.listeners, l)
		ws.mu.Lock()
		ws.need = min(ws.c.quorum, len(ws.listeners))
		ws.mu.Unlock()
		ws.readers.Add(1)
		go func() {
			defer ws.readers.Done()
			for m := range l.Messages() {
				// The message is the releaser's id, then for a fair lock
				// the id of the waiter first in the node's queue.
				from, next, _ := strings.Cut(m.Payload, " ")
				if from == ws.c.id {
					continue // our own Unlock woke our waiter already
				}
				if key, ok := strings.CutPrefix(m.Channel, channelPrefix); ok {
					ws.heardFrom(key, i, next)
				}
			}
		}()
	}
}

// close ends the listeners; their goroutines return once their message
// channels close.
func (ws *waiters) close() {
	ws.subMu.Lock()
	defer ws.subMu.Unlock()
	for _, l := range ws.listeners {
		_ = l.Close()
	}
	ws.listeners = nil
	ws.readers.Wait()
}

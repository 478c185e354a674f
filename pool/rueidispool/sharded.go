package rueidispool

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/pool"
)

var (
	_ pool.ShardedListener   = (*clusterListener)(nil)
	_ pool.SubscriptionState = (*clusterListener)(nil)
)

// Bounds of a cluster listener's placement of sharded channels.
const (
	// placeTimeout bounds one step of a placement: the probe for sharded
	// pub/sub, a read of the slot map, a subscription on a shard.
	placeTimeout = 2 * time.Second
	// placeEvery is how often channels the shards have not confirmed are
	// placed again, and the probe retried; settled, the listener only
	// wakes for a change.
	placeEvery = 250 * time.Millisecond
)

// errUnknownNode is a shard's dial failure while the client does not know
// the shard's address yet.
var errUnknownNode = errors.New("rueidispool: the cluster client does not know the shard's address yet")

// clusterListener is the Listener of a rueidis client in cluster mode:
// plain channels on one dedicated connection (a cluster delivers a PUBLISH
// on every shard), and sharded channels on one dedicated connection per
// shard master that owns one of them. One goroutine (place) finds the
// master that owns each sharded channel's slot, moves the channels whose
// shard changed, and closes the connections left without channels: no
// caller ever waits on it.
type clusterListener struct {
	*listener // the plain channels
	client    rueidis.Client
	kick      chan struct{} // buffered: asks place for a pass
	placed    chan struct{} // closed when place has returned

	mu      sync.Mutex
	bound   time.Duration // of each placement step: the shortest SSubscribe allowed, at most placeTimeout
	probed  bool
	sharded bool
	closing bool
	wanted  map[string]string    // sharded channel -> address of its shard ("" none yet)
	shards  map[string]*listener // by address
	owners  map[int]string       // slot -> master address, as last read; nil to read again
}

// listenCluster returns client's listener, running.
func listenCluster(client rueidis.Client, addr string) *clusterListener {
	l := &clusterListener{
		listener: newListener(addr, dedicate(client), plainCommands, newSink(), false),
		client:   client,
		kick:     make(chan struct{}, 1),
		placed:   make(chan struct{}),
		bound:    placeTimeout,
		wanted:   make(map[string]string),
		shards:   make(map[string]*listener),
	}
	go l.listener.run()
	go l.place()
	return l
}

// Sharded implements pool.ShardedListener.
func (l *clusterListener) Sharded() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sharded
}

// SSubscribe implements pool.ShardedListener. It returns at once: the
// shards are told in the background.
func (l *clusterListener) SSubscribe(ctx context.Context, channels ...string) error {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return errListenerClosed
	}
	if d, ok := ctx.Deadline(); ok {
		l.bound = min(l.bound, max(time.Until(d), time.Millisecond))
	}
	for _, ch := range channels {
		if _, ok := l.wanted[ch]; !ok {
			l.wanted[ch] = ""
		}
	}
	l.mu.Unlock()
	l.poke()
	return nil
}

// SUnsubscribe implements pool.ShardedListener. It returns at once: the
// shards are told in the background, in order with the subscriptions.
func (l *clusterListener) SUnsubscribe(_ context.Context, channels ...string) error {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return errListenerClosed
	}
	for _, ch := range channels {
		delete(l.wanted, ch)
	}
	l.mu.Unlock()
	l.poke()
	return nil
}

// poke asks place for a pass, without waiting.
func (l *clusterListener) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Subscribed implements pool.SubscriptionState for plain and sharded
// channels.
func (l *clusterListener) Subscribed(channel string) bool {
	if l.listener.Subscribed(channel) {
		return true
	}
	l.mu.Lock()
	s := l.shards[l.wanted[channel]]
	l.mu.Unlock()
	return s != nil && s.Subscribed(channel)
}

// Close implements pool.Listener: it ends the plain and the shard
// connections, then closes Messages.
func (l *clusterListener) Close() error {
	l.mu.Lock()
	l.closing = true
	l.mu.Unlock()
	_ = l.listener.Close() // cancels place's context too
	<-l.placed
	l.mu.Lock()
	shards := l.shards
	l.shards = nil
	l.mu.Unlock()
	for _, s := range shards {
		_ = s.Close()
	}
	l.out.close()
	return nil
}

// place probes for sharded pub/sub, then keeps every sharded channel
// subscribed on the master that owns its slot, until Close.
func (l *clusterListener) place() {
	defer close(l.placed)
	ctx := l.listener.ctx
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.kick:
		case <-t.C:
		}
		if settled := l.probe(ctx) && l.pass(ctx); !settled {
			t.Reset(placeEvery)
		}
	}
}

// stepBound returns the bound of one placement step.
func (l *clusterListener) stepBound() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bound
}

// probe asks the cluster, once it can, whether it knows SSUBSCRIBE. It
// reports whether the answer is known.
func (l *clusterListener) probe(ctx context.Context) bool {
	l.mu.Lock()
	done := l.probed
	l.mu.Unlock()
	if done {
		return true
	}
	pctx, cancel := context.WithTimeout(ctx, l.stepBound())
	defer cancel()
	info, err := l.client.Do(pctx, l.client.B().CommandInfo().CommandName("SSUBSCRIBE").Build()).ToArray()
	if _, refused := rueidis.IsRedisErr(err); err != nil && !refused {
		return false // no answer: asked again at the next pass
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.probed = true
	// A refusal (an ACL without COMMAND) tells nothing: plain channels.
	l.sharded = err == nil && len(info) == 1 && !info[0].IsNil()
	return true
}

// pass places each sharded channel that its shard has not confirmed, and
// closes the shard connections left without channels. It reports whether
// every channel is confirmed.
func (l *clusterListener) pass(ctx context.Context) bool {
	l.mu.Lock()
	var pending []string
	for ch, addr := range l.wanted {
		if s := l.shards[addr]; s == nil || !s.Subscribed(ch) {
			pending = append(pending, ch)
		}
	}
	l.mu.Unlock()
	settled := true
	byShard := make(map[*listener][]string)
	for _, ch := range pending {
		// Not confirmed: the subscription is on its way, or its shard
		// refused it (MOVED) or dropped it (the slot moved).
		s, ok := l.owner(ctx, ch)
		if !ok {
			settled = false
		}
		if s != nil {
			byShard[s] = append(byShard[s], ch)
		}
	}
	// Each shard in a goroutine of the pass's own: a shard that does not
	// answer delays nobody else's channels.
	var wg sync.WaitGroup
	var mu sync.Mutex
	for s, chs := range byShard {
		wg.Go(func() {
			if !l.subscribe(ctx, s, chs) {
				mu.Lock()
				settled = false
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if !settled {
		l.mu.Lock()
		l.owners = nil // read again at the next pass: a failover may have moved the slots
		l.mu.Unlock()
	}
	l.prune(ctx)
	return settled
}

// owner records the shard of ch's slot as its place, and returns that
// shard's listener, new if need be; nil when its master is not known, or
// when ch is no longer to be placed. It reports whether ch is placed
// without a subscription to send.
func (l *clusterListener) owner(ctx context.Context, ch string) (*listener, bool) {
	addr := l.master(ctx, keyslot.Slot(ch))
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.wanted[ch]; !ok || l.closing || !l.sharded {
		return nil, true // gone, closing, or heard on plain channels from now on
	}
	if addr == "" {
		return nil, false
	}
	l.wanted[ch] = addr
	s := l.shards[addr]
	if s == nil {
		s = l.newShard(addr)
		l.shards[addr] = s
	}
	return s, s.Subscribed(ch)
}

// subscribe sends SSUBSCRIBE for chs on shard s, unless s confirmed them
// already, and reports whether s confirmed them all.
func (l *clusterListener) subscribe(ctx context.Context, s *listener, chs []string) bool {
	var todo []string
	for _, ch := range chs {
		if !s.Subscribed(ch) {
			todo = append(todo, ch)
		}
	}
	if len(todo) == 0 {
		return true
	}
	sctx, cancel := context.WithTimeout(ctx, l.stepBound())
	defer cancel()
	return s.Subscribe(sctx, todo...) == nil
}

// newShard returns a running listener of the shard master at addr, which
// delivers to l's Messages. l.mu is held.
func (l *clusterListener) newShard(addr string) *listener {
	s := newListener(addr, l.nodeDialer(addr), shardedCommands, l.out, false)
	s.changed = l.refused
	go s.run()
	return s
}

// nodeDialer returns how to open a dedicated connection to the node at
// addr, with the client's options.
func (l *clusterListener) nodeDialer(addr string) func() (rueidis.DedicatedClient, error) {
	return func() (rueidis.DedicatedClient, error) {
		node, ok := l.client.Nodes()[addr]
		if !ok {
			return nil, errUnknownNode
		}
		conn, _ := node.Dedicate()
		return conn, nil
	}
}

// refused is told by a shard of a refused subscription (err) or a dropped
// channel (nil). A MOVED names the slot's new master; any other change
// has the slot map read again. A shard that does not know SSUBSCRIBE turns
// sharded off: new waiters use plain channels.
func (l *clusterListener) refused(err error) {
	l.mu.Lock()
	re, _ := rueidis.IsRedisErr(err)
	switch {
	case re != nil && strings.Contains(strings.ToLower(re.Error()), "unknown command"):
		l.sharded = false
	case re != nil:
		if addr, ok := re.IsMoved(); ok && l.owners != nil {
			// "MOVED <slot> <addr>"
			if f := strings.Fields(re.Error()); len(f) == 3 {
				if slot, err := strconv.Atoi(f[1]); err == nil {
					l.owners[slot] = addr
					break
				}
			}
		}
		l.owners = nil
	default:
		l.owners = nil
	}
	l.mu.Unlock()
	l.poke()
}

// prune unsubscribes each shard from the channels not wanted there (any
// more), and closes the shards left without channels.
func (l *clusterListener) prune(ctx context.Context) {
	l.mu.Lock()
	bound := l.bound
	extra := make(map[*listener][]string)
	var idle []*listener
	for addr, s := range l.shards {
		n := 0
		for _, ch := range s.wants() {
			if l.wanted[ch] == addr {
				n++
			} else {
				extra[s] = append(extra[s], ch)
			}
		}
		if n == 0 {
			idle = append(idle, s)
			delete(l.shards, addr)
			delete(extra, s)
		}
	}
	l.mu.Unlock()
	for s, chs := range extra {
		uctx, cancel := context.WithTimeout(ctx, bound)
		_ = s.Unsubscribe(uctx, chs...)
		cancel()
	}
	for _, s := range idle {
		_ = s.Close()
	}
}

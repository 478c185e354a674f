package pool

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ShardedListener is for adapters: an optional interface of the Listener of
// a node that is a Redis Cluster with sharded pub/sub (Redis 7.0 and
// later). A message published with SPUBLISH goes only to the shard that
// owns its channel's slot, where a plain PUBLISH goes to every shard.
type ShardedListener interface {
	// Sharded reports whether the node was found to have sharded pub/sub.
	// It is false until the Listener has asked the node, and false for
	// good once a shard refused SSUBSCRIBE. It never blocks on I/O.
	Sharded() bool
	// SSubscribe adds sharded channels: each is heard on the master that
	// owns its slot, and followed there when the slot moves. It returns at
	// once; the subscriptions are made in the background, each step of
	// which (a look-up of the slot's master, a write) is bounded by the
	// time ctx had left, if shorter than the Listener's own bounds. Their
	// messages come on Messages, and SubscriptionState.Subscribed reports
	// them.
	SSubscribe(ctx context.Context, channels ...string) error
	// SUnsubscribe removes sharded channels, with the same bound.
	SUnsubscribe(ctx context.Context, channels ...string) error
}

// Bounds of a cluster listener's placement of sharded channels.
const (
	// placeTimeout bounds one look-up of a channel's shard, and the probe
	// for sharded pub/sub.
	placeTimeout = 2 * time.Second
	// placeEvery is how often channels the shards have not confirmed are
	// placed again, and the probe retried; settled, the listener only
	// wakes for a change.
	placeEvery = 250 * time.Millisecond
)

// clusterListener is the Listener of a *redis.ClusterClient: plain
// channels on one connection to a seed (a cluster broadcasts PUBLISH), and
// sharded channels on one connection per shard master that owns one of
// them. One goroutine (place) asks the cluster which master owns each
// sharded channel, moves the channels whose shard changed, and closes the
// connections left without channels: no caller ever waits on it.
type clusterListener struct {
	*listener // the plain channels
	client    *redis.ClusterClient
	opts      *redis.ClusterOptions
	kick      chan struct{} // buffered: asks place for a pass
	placed    chan struct{} // closed when place has returned

	mu      sync.Mutex
	bound   time.Duration // of each placement step: the shortest SSubscribe allowed, at most placeTimeout
	probed  bool
	sharded bool
	wanted  map[string]string    // sharded channel -> address of its shard ("" none yet)
	shards  map[string]*listener // by address
}

// listenCluster returns c's listener, running.
func listenCluster(c *redis.ClusterClient, dial func(context.Context) (net.Conn, error),
	auth func(context.Context) ([]string, error)) *clusterListener {
	l := &clusterListener{
		listener: newListener(dial, auth, plainCommands, make(chan Message, messageBuffer), false),
		client:   c,
		opts:     c.Options(),
		kick:     make(chan struct{}, 1),
		placed:   make(chan struct{}),
		wanted:   make(map[string]string),
		shards:   make(map[string]*listener),
		bound:    placeTimeout,
	}
	go l.listener.run()
	go l.place()
	return l
}

// Sharded implements ShardedListener.
func (l *clusterListener) Sharded() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sharded
}

// SSubscribe implements ShardedListener.
func (l *clusterListener) SSubscribe(ctx context.Context, channels ...string) error {
	l.mu.Lock()
	if l.closed() {
		l.mu.Unlock()
		return net.ErrClosed
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

// SUnsubscribe implements ShardedListener. It returns at once: the
// shards are told in the background, in order with the subscriptions.
func (l *clusterListener) SUnsubscribe(_ context.Context, channels ...string) error {
	l.mu.Lock()
	if l.closed() {
		l.mu.Unlock()
		return net.ErrClosed
	}
	for _, ch := range channels {
		delete(l.wanted, ch)
	}
	l.mu.Unlock()
	l.poke()
	return nil
}

// closed reports whether Close has begun.
func (l *clusterListener) closed() bool { return l.listener.ctx.Err() != nil }

// poke asks place for a pass, without waiting.
func (l *clusterListener) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Subscribed implements SubscriptionState for plain and sharded channels.
func (l *clusterListener) Subscribed(channel string) bool {
	if l.listener.Subscribed(channel) {
		return true
	}
	l.mu.Lock()
	s := l.shards[l.wanted[channel]]
	l.mu.Unlock()
	return s != nil && s.Subscribed(channel)
}

// Close implements Listener: it ends the plain and the shard connections,
// then closes Messages.
func (l *clusterListener) Close() error {
	_ = l.listener.Close() // cancels place's context too
	<-l.placed
	l.mu.Lock()
	shards := l.shards
	l.shards = nil
	l.mu.Unlock()
	for _, s := range shards {
		_ = s.Close()
	}
	close(l.out)
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
		settled := l.probe(ctx) && l.pass(ctx)
		if !settled {
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
	info, err := l.client.Do(pctx, "COMMAND", "INFO", "SSUBSCRIBE").Slice()
	var refused redis.Error
	if err != nil && !errors.As(err, &refused) {
		return false // no answer: asked again at the next pass
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.probed = true
	// A refusal (an ACL without COMMAND) tells nothing: plain channels.
	l.sharded = err == nil && len(info) == 1 && info[0] != nil
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
	for _, ch := range pending {
		// Not confirmed: the subscription is on its way, or its shard
		// refused it (MOVED) or dropped it (the slot moved).
		if !l.placeOne(ctx, ch) {
			settled = false
		}
	}
	if !settled {
		l.client.ReloadState(ctx) // asynchronous: the next pass sees it
	}
	l.prune(ctx)
	return settled
}

// placeOne subscribes ch on the master that owns its slot now, moving it
// from another shard. It reports whether ch is confirmed there.
func (l *clusterListener) placeOne(ctx context.Context, ch string) bool {
	pctx, cancel := context.WithTimeout(ctx, l.stepBound())
	master, err := l.client.MasterForKey(pctx, ch)
	cancel()
	if err != nil {
		return false
	}
	addr := master.Options().Addr
	l.mu.Lock()
	_, ok := l.wanted[ch]
	if !ok || l.shards == nil || !l.sharded {
		l.mu.Unlock()
		return true // gone, closing, or heard on plain channels from now on
	}
	l.wanted[ch] = addr
	to := l.shards[addr]
	if to == nil {
		to = l.newShard(addr)
		l.shards[addr] = to
	}
	l.mu.Unlock()
	// A shard the channel left unsubscribes it in prune.
	if to.Subscribed(ch) {
		return true
	}
	// Sent again on the same shard too: a refused or dropped subscription
	// is not retried by the shard's listener itself.
	wctx, cancel := context.WithTimeout(ctx, min(l.stepBound(), writeTimeout))
	_ = to.Subscribe(wctx, ch)
	cancel()
	return false
}

// newShard returns a running listener of the shard master at addr, which
// delivers to l's Messages. l.mu is held.
func (l *clusterListener) newShard(addr string) *listener {
	o := seedOptions(l.opts, addr)
	s := newListener(dialer(o), login(o), shardedCommands, l.out, false)
	s.changed = l.refused
	go s.run()
	return s
}

// refused is told by a shard of a refused command or a dropped channel.
// A shard that does not know SSUBSCRIBE turns sharded off: new waiters use
// plain channels.
func (l *clusterListener) refused(reply string) {
	if strings.Contains(strings.ToLower(reply), "unknown command") {
		l.mu.Lock()
		l.sharded = false
		l.mu.Unlock()
	}
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
		wctx, cancel := context.WithTimeout(ctx, min(bound, writeTimeout))
		_ = s.Unsubscribe(wctx, chs...)
		cancel()
	}
	for _, s := range idle {
		_ = s.Close()
	}
}

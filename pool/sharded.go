package pool

import (
	"context"
	"errors"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/pool/internal/shardlisten"
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

var (
	_ ShardedListener   = (*clusterListener)(nil)
	_ SubscriptionState = (*clusterListener)(nil)
)

// clusterListener is the Listener of a *redis.ClusterClient: plain
// channels on one connection to a seed (a cluster broadcasts PUBLISH), and
// sharded channels on one connection per shard master that owns one of
// them, kept placed by the embedded Set (its goroutine asks the cluster
// which master owns each sharded channel, moves the channels whose shard
// changed, and closes the connections left without channels: no caller
// ever waits on it).
type clusterListener struct {
	*listener                   // the plain channels
	*shardlisten.Set[*listener] // the sharded channels
	client                      *redis.ClusterClient
	opts                        *redis.ClusterOptions
}

// listenCluster returns c's listener, running.
func listenCluster(c *redis.ClusterClient, dial func(context.Context) (net.Conn, error),
	auth func(context.Context) ([]string, error)) *clusterListener {
	l := &clusterListener{
		listener: newListener(dial, auth, plainCommands, make(chan Message, messageBuffer), false),
		client:   c,
		opts:     c.Options(),
	}
	l.Set = shardlisten.New(shardlisten.Config[*listener]{
		Probe:        l.probe,
		NewShard:     l.newShard,
		Place:        l.place,
		Closed:       net.ErrClosed,
		WriteTimeout: writeTimeout,
	})
	go l.listener.run()
	l.Set.Start()
	return l
}

// Subscribed implements SubscriptionState for plain and sharded channels.
func (l *clusterListener) Subscribed(channel string) bool {
	return l.listener.Subscribed(channel) || l.Set.Subscribed(channel)
}

// Close implements Listener: it ends the plain and the shard connections,
// then closes Messages.
func (l *clusterListener) Close() error {
	l.Set.Close()
	_ = l.listener.Close()
	close(l.out)
	return nil
}

// probe asks the cluster whether it knows SSUBSCRIBE; known is false when
// it did not answer.
func (l *clusterListener) probe(ctx context.Context) (sharded, known bool) {
	info, err := l.client.Do(ctx, "COMMAND", "INFO", "SSUBSCRIBE").Slice()
	var refused redis.Error
	if err != nil && !errors.As(err, &refused) {
		return false, false
	}
	return err == nil && len(info) == 1 && info[0] != nil, true
}

// place places each pending channel in turn, and has the client read the
// slot map again (in the background) unless all are confirmed. It reports
// whether all are.
func (l *clusterListener) place(ctx context.Context, pending []string) bool {
	settled := true
	for _, ch := range pending {
		if !l.placeOne(ctx, ch) {
			settled = false
		}
	}
	if !settled {
		l.client.ReloadState(ctx) // asynchronous: the next pass sees it
	}
	return settled
}

// placeOne subscribes ch on the master that owns its slot now, moving it
// from another shard. It reports whether ch is confirmed there.
func (l *clusterListener) placeOne(ctx context.Context, ch string) bool {
	pctx, cancel := context.WithTimeout(ctx, l.StepBound())
	master, err := l.client.MasterForKey(pctx, ch)
	cancel()
	if err != nil {
		return false
	}
	to, ok := l.Claim(ch, master.Options().Addr)
	if !ok {
		return true // gone, closing, or heard on plain channels from now on
	}
	if to == nil {
		return false // no address: asked again at the next pass
	}
	// A shard the channel left unsubscribes it when the pass prunes.
	if to.Subscribed(ch) {
		return true
	}
	// Sent again on the same shard too: a refused or dropped subscription
	// is not retried by the shard's listener itself.
	wctx, cancel := context.WithTimeout(ctx, min(l.StepBound(), writeTimeout))
	_ = to.Subscribe(wctx, ch)
	cancel()
	return false
}

// newShard returns a running listener of the shard master at addr, which
// delivers to l's Messages.
func (l *clusterListener) newShard(addr string) *listener {
	o := seedOptions(l.opts, addr)
	s := newListener(dialer(o), login(o), shardedCommands, l.out, false)
	s.changed = l.Refused
	go s.run()
	return s
}

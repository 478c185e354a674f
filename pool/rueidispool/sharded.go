package rueidispool

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/rueidis"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/pool/internal/shardlisten"
)

var (
	_ pool.ShardedListener   = (*clusterListener)(nil)
	_ pool.SubscriptionState = (*clusterListener)(nil)
)

// errUnknownNode is a shard's dial failure while the client does not know
// the shard's address yet.
var errUnknownNode = errors.New("rueidispool: the cluster client does not know the shard's address yet")

// clusterListener is the Listener of a rueidis client in cluster mode:
// plain channels on one dedicated connection (a cluster delivers a PUBLISH
// on every shard), and sharded channels on one dedicated connection per
// shard master that owns one of them, kept placed by the embedded Set (its
// goroutine finds the master that owns each sharded channel's slot, moves
// the channels whose shard changed, and closes the connections left
// without channels: no caller ever waits on it).
type clusterListener struct {
	*listener                   // the plain channels
	*shardlisten.Set[*listener] // the sharded channels
	client                      rueidis.Client

	slotsMu sync.Mutex
	owners  map[int]string // slot -> master address, as last read; nil to read again; under slotsMu
}

// listenCluster returns client's listener, running.
func listenCluster(client rueidis.Client, addr string) *clusterListener {
	l := &clusterListener{
		listener: newListener(addr, dedicate(client), plainCommands, newSink(), false),
		client:   client,
	}
	l.Set = shardlisten.New(shardlisten.Config[*listener]{
		Probe:    l.probe,
		NewShard: l.newShard,
		Place:    l.place,
		Closed:   errListenerClosed,
	})
	go l.listener.run()
	l.Set.Start()
	return l
}

// Subscribed implements pool.SubscriptionState for plain and sharded
// channels.
func (l *clusterListener) Subscribed(channel string) bool {
	return l.listener.Subscribed(channel) || l.Set.Subscribed(channel)
}

// Close implements pool.Listener: it ends the plain and the shard
// connections, then closes Messages.
func (l *clusterListener) Close() error {
	l.Set.Close()
	_ = l.listener.Close()
	l.out.close()
	return nil
}

// probe asks the cluster whether it knows SSUBSCRIBE; known is false when
// it did not answer.
func (l *clusterListener) probe(ctx context.Context) (sharded, known bool) {
	info, err := l.client.Do(ctx, l.client.B().CommandInfo().CommandName("SSUBSCRIBE").Build()).ToArray()
	if _, refused := rueidis.IsRedisErr(err); err != nil && !refused {
		return false, false
	}
	return err == nil && len(info) == 1 && !info[0].IsNil(), true
}

// place subscribes the pending channels, grouped by the shard that owns
// them, and reports whether every one is confirmed. Unless all are, the
// slot map is read again at the next pass: a failover may have moved the
// slots.
func (l *clusterListener) place(ctx context.Context, pending []string) bool {
	settled := true
	byShard := make(map[*listener][]string)
	for _, ch := range pending {
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
		l.forgetSlots()
	}
	return settled
}

// owner records the shard of ch's slot as its place, and returns that
// shard's listener, new if need be; nil when its master is not known, or
// when ch is no longer to be placed. It reports whether ch is placed
// without a subscription to send.
func (l *clusterListener) owner(ctx context.Context, ch string) (*listener, bool) {
	s, ok := l.Claim(ch, l.master(ctx, keyslot.Slot(ch)))
	if !ok {
		return nil, true // gone, closing, or heard on plain channels from now on
	}
	if s == nil {
		return nil, false
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
	sctx, cancel := context.WithTimeout(ctx, l.StepBound())
	defer cancel()
	return s.Subscribe(sctx, todo...) == nil
}

// newShard returns a running listener of the shard master at addr, which
// delivers to l's Messages.
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
// but an unknown command has the slot map read again. The Set hears of
// it all, and turns sharded off for an unknown command.
func (l *clusterListener) refused(err error) {
	var reply string
	if re, _ := rueidis.IsRedisErr(err); re != nil {
		reply = re.Error()
		if !shardlisten.UnknownCommand(reply) {
			l.moved(re)
		}
	} else {
		l.forgetSlots()
	}
	l.Refused(reply)
}

// moved notes the new master a MOVED reply names, or has the slot map read
// again for any other refusal.
func (l *clusterListener) moved(re *rueidis.RedisError) {
	l.slotsMu.Lock()
	defer l.slotsMu.Unlock()
	if addr, ok := re.IsMoved(); ok && l.owners != nil {
		// "MOVED <slot> <addr>"
		if f := strings.Fields(re.Error()); len(f) == 3 {
			if slot, err := strconv.Atoi(f[1]); err == nil {
				l.owners[slot] = addr
				return
			}
		}
	}
	l.owners = nil
}

// forgetSlots has the slot map read again.
func (l *clusterListener) forgetSlots() {
	l.slotsMu.Lock()
	l.owners = nil
	l.slotsMu.Unlock()
}

package wait

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/pool"
)

// Hold returns the channel on which this Client hears the grants and
// wake-ups of key on each node, for a call to register there. On a node
// whose listener has sharded pub/sub (a Redis 7 cluster) it is the
// Client's channel in key's slot (keyslot.ShardChannel), which the scripts
// publish to with SPUBLISH, so that only the shard that owns the key sends
// it, and only this Client's connection to that shard receives it: the
// listener subscribes to it while a call holds it (until done), and for a
// while after (take).
// Elsewhere it is the Client's channel, heard on one connection per node.
// Hold does no I/O: the listener subscribes in the background, as it does
// the Client's channel.
func (g *Grants) Hold(key string, nodes int) (channels []string, done func()) {
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

// take counts delta holders of node i's sharded channel ch, subscribing on
// the first. A channel nobody holds stays subscribed for shardLinger, so
// that the next wait on a key of its slot (a hot key's next waiter) finds
// it confirmed, and is unsubscribed by a later take once that has passed.
// g.mu is held: the listener's calls only record the change (no I/O), and
// their order is the holders'.
func (g *Grants) take(i int, l pool.ShardedListener, ch string, delta int) {
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
			ctx, cancel := context.WithTimeout(context.Background(), g.subscribeTimeout())
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
func (g *Grants) ours(ch string) bool {
	if ch == g.channel {
		return true
	}
	rest, ok := strings.CutSuffix(ch, "}"+g.channel)
	return ok && strings.HasPrefix(rest, "{") && !strings.Contains(rest[1:], "}")
}

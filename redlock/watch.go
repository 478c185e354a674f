package redlock

import (
	"time"

	"github.com/redlockgo/redlock/pool"
)

// Wake-ups across Clients. A LockAll, RLock or AcquirePermit call that
// will try again registers its Client's channel (the one its grants come
// on) as a watcher of the key it found taken, on each node, in the script
// of the attempt that found it taken: the key's watch set
// (scripts.WatchKey), channel -> expiry. An Unlock whose release leaves a
// key free on a node ends by publishing "free <key>" to the watchers there
// and dropping the set (watch.lua); the Client's listener (grants.listen)
// passes the key to released, which wakes the calls watching it, and they
// try again at once.
//
// Because the registration is part of the failed attempt's script, a
// release that runs after it on that node finds it: a wake-up is lost only
// with a message (a listener reconnecting), and then costs a retry delay.
// Only an Unlock wakes. The cleanup of a failed attempt frees nothing that
// anybody held, and if it woke, two waiters whose attempts landed on a
// minority could wake each other forever.
//
// A watcher's lease covers the pause before its next attempt and that
// attempt's way to the node: a Client that died stops renewing it, and its
// entry, then the set, expire. A set holds at most one entry per Client.

// wakePrefix begins the message that tells a watching Client its key is
// free; the key follows. Grants never begin with it: a token is upper case.
const wakePrefix = "free "

// watching is a blocked call's registration for one attempt: the Client's
// channel, for lease. A nil *watching registers nothing (a Try call, or
// the last attempt).
type watching struct {
	channels []string // on each node (grants.hold)
	lease    time.Duration
}

// maxWatchPause is the longest pause a watcher's lease covers: a retry
// strategy's delay beyond it still waits, but a release after it is
// noticed only at the next retry.
const maxWatchPause = 24 * time.Hour

// watching returns the registration on channels (startWatching's) of an
// attempt that is followed by a pause of delay when it fails, if retry;
// nil otherwise.
func (c *Client) watching(channels []string, retry bool, delay, ttl time.Duration) *watching {
	if !retry {
		return nil
	}
	lease := min(max(delay, 0), maxWatchPause) + 2*c.nodeTimeout(ttl) + time.Second
	return &watching{channels: channels, lease: lease}
}

// nodeWatch is what an attempt's script on one node needs to register w:
// the watch sets of the call's keys there, the channel, the lease in ms.
// The zero value registers nothing.
type nodeWatch struct {
	keys    []string
	channel string
	lease   int64
}

// on returns w's registration on node i of c for the keys kind watches;
// nothing where the node cannot be listened to, since its messages would go
// unheard.
func (w *watching) on(c *Client, i int, kind leaseKind) nodeWatch {
	if w == nil {
		return nodeWatch{}
	}
	if _, ok := c.pools[i].(pool.Notifier); !ok {
		return nodeWatch{}
	}
	ch := c.grants.channel
	if i < len(w.channels) {
		ch = w.channels[i]
	}
	return nodeWatch{keys: c.watchKeys(i, kind.watched()), channel: ch, lease: w.lease.Milliseconds()}
}

// startWatching prepares a blocked call on keys for wake-ups: the Client
// listens to the nodes (once), and the call is woken by releases of keys
// heard or made here. It returns the wake-up channel, the channels the
// call registers on each node (grants.hold: on a cluster node, keys must
// share a slot, as the call's scripts need anyway) and the function that
// stops watching.
func (c *Client) startWatching(keys []string) (<-chan struct{}, []string, func()) {
	c.grants.start(c.pools, c.nodeTimeout(0))
	channels, release := c.grants.hold(keys[0], len(c.pools))
	woken, stop := c.released.watch(keys)
	return woken, channels, func() {
		stop()
		release()
	}
}

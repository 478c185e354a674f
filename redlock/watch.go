package redlock

import (
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/internal/wait"
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
// release that runs after it on that node finds it. Its message is heard
// only once the Client's subscription there is confirmed, and the listener
// subscribes in the background (grants.start): a registration made before
// (a new Client's first blocked call, a listener reconnecting) leaves a
// window in which a release is announced to nobody. As for Lock's waiter
// (internal/wait, Deaf nodes), the pause after such an attempt looks, without
// I/O, at growing intervals, for such a node that listens now, and then
// tries again at once: that attempt finds the key freed in the window, or
// registers where it will be heard. A wake-up is otherwise lost only with
// a message (a listener's connection dropping after the confirmation), and
// then costs a retry delay.
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
	// heard is, for each node, whether a release there will be heard:
	// unknown before its take is sent, deaf when the registration went
	// before the Client's subscription to its channel there was
	// confirmed. Each node's take sets its own, a straggler's after the
	// decision too.
	heard []atomic.Int32
}

// How a release on a node will be heard by a watcher (watching.heard).
const (
	heardUnknown int32 = iota // the take has not been sent yet
	heardYes                  // subscribed, or nothing registered there
	heardDeaf                 // registered before the subscription was confirmed
)

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
	return &watching{channels: channels, lease: lease, heard: make([]atomic.Int32, c.nodes.Len())}
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
	if _, ok := c.nodes.Pool(i).(pool.Notifier); !ok {
		w.heard[i].Store(heardYes)
		return nodeWatch{}
	}
	ch := w.channel(c, i)
	// Asked before the script is sent: a release that the node runs after
	// a confirmed subscription is heard.
	if c.waits.grants.listening(i, ch) {
		w.heard[i].Store(heardYes)
	} else {
		w.heard[i].Store(heardDeaf)
	}
	return nodeWatch{keys: c.watchKeys(i, kind.watched()), channel: ch, lease: w.lease.Milliseconds()}
}

// channel returns the channel w registers on node i of c.
func (w *watching) channel(c *Client, i int) string {
	if i < len(w.channels) {
		return w.channels[i]
	}
	return c.waits.grants.channel
}

// anyDeaf reports whether w registered on a node before the Client's
// subscription there was confirmed, or may still (a straggler).
func (w *watching) anyDeaf() bool {
	if w == nil {
		return false
	}
	for i := range w.heard {
		if w.heard[i].Load() != heardYes {
			return true
		}
	}
	return false
}

// caughtUp reports whether a node where w registered deaf listens now: a
// release it ran in between was announced to nobody.
func (w *watching) caughtUp(c *Client) bool {
	if w == nil {
		return false
	}
	for i := range w.heard {
		if w.heard[i].Load() == heardDeaf && c.waits.grants.listening(i, w.channel(c, i)) {
			return true
		}
	}
	return false
}

// deafTimer is a pause's look for w's deaf nodes catching up (see
// caughtUp), at growing intervals from wait.MinDeafPoll to wait.MaxDeafPoll, as
// Lock's waiter does: no I/O, and no timer at all once every node's take
// was sent while its subscription was confirmed. A node that never
// confirms (a listener that cannot connect) costs one timer every
// wait.MaxDeafPoll while the pause lasts.
type deafTimer struct {
	c    *Client
	w    *watching
	t    clock.Timer
	poll time.Duration
}

// listenFor returns the deaf timer of a pause after w's attempt.
func (c *Client) listenFor(w *watching) *deafTimer {
	d := &deafTimer{c: c, w: w, poll: wait.MinDeafPoll}
	d.arm()
	return d
}

// arm starts the timer while a node may be deaf.
func (d *deafTimer) arm() {
	if d.w.anyDeaf() {
		d.t = d.c.cfg.clock.NewTimer(d.poll)
	}
}

// C fires when the timer is due; nil (never) when no node is deaf.
func (d *deafTimer) C() <-chan time.Time {
	if d.t == nil {
		return nil
	}
	return d.t.C()
}

// caughtUp is called when C fired: it reports whether a deaf node listens
// now, and otherwise arms the timer again, later.
func (d *deafTimer) caughtUp() bool {
	d.t = nil
	if d.w.caughtUp(d.c) {
		return true
	}
	d.poll = min(2*d.poll, wait.MaxDeafPoll)
	d.arm()
	return false
}

// stop releases the timer.
func (d *deafTimer) stop() {
	if d.t != nil {
		d.t.Stop()
	}
}

// startWatching prepares a blocked call on keys for wake-ups: the Client
// listens to the nodes (once), and the call is woken by releases of keys
// heard or made here. It returns the wake-up channel, the channels the
// call registers on each node (grants.hold: on a cluster node, keys must
// share a slot, as the call's scripts need anyway) and the function that
// stops watching.
func (c *Client) startWatching(keys []string) (<-chan struct{}, []string, func()) {
	c.waits.grants.start(c.nodes.Pools(), c.nodeTimeout(0))
	channels, release := c.waits.grants.hold(keys[0], c.nodes.Len())
	woken, stop := c.waits.released.watch(keys)
	return woken, channels, func() {
		stop()
		release()
	}
}

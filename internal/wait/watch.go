package wait

import (
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/clock"
)

// Wake-ups across Clients. A call that retries (LockAll, RLock,
// AcquirePermit, an owner's Lock) and will try again registers its
// Client's channel (the one its grants come on) as a watcher of the key it
// found taken, on each node, in the script of the attempt that found it
// taken: the key's watch set (keyspace.Naming.Watch), channel -> expiry. An
// Unlock whose release leaves a key free on a node ends by publishing
// "free <key>" to the watchers there and dropping the set (watch.lua); the
// Client's listener (Grants) passes the key to Releases, which wakes the
// calls watching it, and they try again at once.
//
// Because the registration is part of the failed attempt's script, a
// release that runs after it on that node finds it. Its message is heard
// only once the Client's subscription there is confirmed, and the listener
// subscribes in the background (Grants.Start): a registration made before
// (a new Client's first blocked call, a listener reconnecting) leaves a
// window in which a release is announced to nobody. As for Lock's waiter
// (MinDeafPoll, rounds.go), the pause after such an attempt looks, without
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

// Watch is a blocked call's registration for one attempt: the Client's
// channel on each node, for a lease. A nil *Watch registers nothing (a Try
// call, or the last attempt).
type Watch struct {
	g        *Grants
	channels []string // on each node (Grants.Hold)
	lease    time.Duration
	// queue is how long a place in the keys' queues, kept by the attempt,
	// lasts (0: the call keeps none): a beat at most, not the pause.
	queue time.Duration
	// heard is, for each node, whether a release there will be heard:
	// unknown before its take is sent, deaf when the registration went
	// before the Client's subscription to its channel there was
	// confirmed. Each node's take sets its own, a straggler's after the
	// decision too.
	heard []atomic.Int32
}

// How a release on a node will be heard by a watcher (Watch.heard).
const (
	heardUnknown int32 = iota // the take has not been sent yet
	heardYes                  // subscribed, or nothing registered there
	heardDeaf                 // registered before the subscription was confirmed
)

// MaxWatchPause is the longest pause a watcher's lease covers: a retry
// strategy's delay beyond it still waits, but a release after it is
// noticed only at the next retry.
const MaxWatchPause = 24 * time.Hour

// newWatch returns the registration on channels of an attempt that is
// followed by a pause of delay when it fails; timeout bounds each node call.
// beat > 0 (Hub.Retry) gives the attempt's place in the queues a lease
// that covers the next beat instead of the pause.
func (g *Grants) newWatch(channels []string, delay, beat, timeout time.Duration) *Watch {
	pause := min(max(delay, 0), MaxWatchPause)
	w := &Watch{g: g, channels: channels, lease: pause + 2*timeout + time.Second, heard: make([]atomic.Int32, len(channels))}
	if beat > 0 {
		w.queue = min(pause, beat) + 2*timeout + time.Second
	}
	return w
}

// On returns what node i's take script needs to register w: the channel
// and the lease in ms; ok is false, and nothing is to be registered, for a
// nil w or where the node cannot be listened to, since its messages would
// go unheard. Call it right before the script is sent: whether the
// Client's subscription there is confirmed then decides whether a release
// the node runs after it will be heard.
func (w *Watch) On(i int) (channel string, lease int64, ok bool) {
	if w == nil {
		return "", 0, false
	}
	if !w.g.CanListen(i) {
		w.heard[i].Store(heardYes)
		return "", 0, false
	}
	ch := w.channel(i)
	if w.g.Listening(i, ch) {
		w.heard[i].Store(heardYes)
	} else {
		w.heard[i].Store(heardDeaf)
	}
	return ch, w.lease.Milliseconds(), true
}

// Queue returns how long the place in the keys' queues that w's attempt
// keeps lasts: the pause after the attempt, at most a beat (Hub.Retry),
// and that attempt's way to the nodes; 0 for a nil w (no attempt follows)
// or a call that keeps no place. A Client that dies stops refreshing it.
func (w *Watch) Queue() time.Duration {
	if w == nil {
		return 0
	}
	return w.queue
}

// channel returns the channel w registers on node i.
func (w *Watch) channel(i int) string {
	if i < len(w.channels) {
		return w.channels[i]
	}
	return w.g.channel
}

// anyDeaf reports whether w registered on a node before the Client's
// subscription there was confirmed, or may still (a straggler).
func (w *Watch) anyDeaf() bool {
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
func (w *Watch) caughtUp() bool {
	if w == nil {
		return false
	}
	for i := range w.heard {
		if w.heard[i].Load() == heardDeaf && w.g.Listening(i, w.channel(i)) {
			return true
		}
	}
	return false
}

// deafTimer is a pause's look for w's deaf nodes catching up (see
// caughtUp), at growing intervals from MinDeafPoll to MaxDeafPoll, as
// Lock's waiter does: no I/O, and no timer at all once every node's take
// was sent while its subscription was confirmed. A node that never
// confirms (a listener that cannot connect) costs one timer every
// MaxDeafPoll while the pause lasts.
type deafTimer struct {
	clk  clock.Clock
	w    *Watch
	t    clock.Timer
	poll time.Duration
}

// listenFor returns the deaf timer of a pause after w's attempt.
func listenFor(clk clock.Clock, w *Watch) *deafTimer {
	d := &deafTimer{clk: clk, w: w, poll: MinDeafPoll}
	d.arm()
	return d
}

// arm starts the timer while a node may be deaf.
func (d *deafTimer) arm() {
	if d.w.anyDeaf() {
		d.t = d.clk.NewTimer(d.poll)
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
	if d.w.caughtUp() {
		return true
	}
	d.poll = min(2*d.poll, MaxDeafPoll)
	d.arm()
	return false
}

// stop releases the timer.
func (d *deafTimer) stop() {
	if d.t != nil {
		d.t.Stop()
	}
}

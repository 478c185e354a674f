package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/redlockgo/redlock/redlock"
)

// worker is one Client and the caller that uses it: one goroutine that
// makes one call at a time, as one process of a service would, with its
// own seeded source for every choice it makes.
type worker struct {
	r       *runner
	c       int
	rng     *rand.Rand
	client  *redlock.Client
	timeout time.Duration // the Client's node timeout
	start   time.Duration // when the Client is created
	spawned int           // Clients created to resume a lock, for their links' sources
	groups  int           // groups of holds made, for their names
}

// workload is one kind of call a worker makes; a run draws how often
// each is made (drawWeights).
type workload struct {
	name string
	run  func(w *worker)
}

var workloads = []workload{
	{"lock", (*worker).exclusive}, // TryLock, Lock, Do, TryDo, auto-extended
	{"read", (*worker).read},      // TryRLock, RLock, on the locks' keys
	{"permit", (*worker).permit},  // TryAcquirePermit, AcquirePermit
	{"multi", (*worker).multi},    // TryLockAll, LockAll, DoAll over the locks' keys
	{"elect", (*worker).elect},    // Campaign and Resign, Lead
	{"resume", (*worker).resume},  // Resume by another Client, with another TTL
	{"owner", (*worker).owner},    // WithOwner, re-entered
}

// drawWeights draws how often each workload is made in a run: 0 to 3
// parts each, at least one part in all.
func drawWeights(rng *rand.Rand) []int {
	ws := make([]int, len(workloads))
	sum := 0
	for i := range ws {
		ws[i] = rng.IntN(4)
		sum += ws[i]
	}
	if sum == 0 {
		ws[rng.IntN(len(ws))] = 1
	}
	return ws
}

// mix names a run's weights, for its parameters.
func mix(ws []int) string {
	var parts []string
	for i, n := range ws {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s:%d", workloads[i].name, n))
		}
	}
	return strings.Join(parts, ",")
}

// run creates the worker's Client at its start, unless the run created it
// already, and makes calls until the run's span has passed, then the last
// phase's (live.go), then closes the Client.
func (w *worker) run() {
	if w.client == nil {
		w.r.nw.sleepUntil(w.start)
		w.client = w.r.client(w.c, w.c, w.timeout)
	}
	if w.client == nil {
		w.live()
		return
	}
	defer w.client.Close()
	for w.r.nw.now() < w.r.span {
		time.Sleep(time.Duration(w.rng.Int64N(int64(300 * time.Millisecond))))
		w.pick().run(w)
	}
	w.live() // the last phase: liveness once the faults have healed
}

// pick draws the next workload by the run's weights.
func (w *worker) pick() workload {
	sum := 0
	for _, n := range w.r.weights {
		sum += n
	}
	x := w.rng.IntN(sum)
	for i, n := range w.r.weights {
		if x < n {
			return workloads[i]
		}
		x -= n
	}
	panic("unreachable")
}

// ttl draws a TTL a lock kept alive accepts with this Client's node
// timeout: over three times the node timeout, plus room.
func (w *worker) ttl() time.Duration { return w.ttlFor(w.timeout) }

func (w *worker) ttlFor(timeout time.Duration) time.Duration {
	lo := 4*timeout + 100*time.Millisecond
	return lo + time.Duration(w.rng.Int64N(int64(2*time.Second)))
}

// wait draws how long a waiting call may wait.
func (w *worker) wait() time.Duration { return time.Duration(w.rng.Int64N(int64(3 * time.Second))) }

// fenced draws whether a call asks for a fence: half the time, where every
// node persists (fences are promised only there, docs/fencing.md).
func (w *worker) fenced() bool { return w.r.fencing && w.rng.IntN(2) == 0 }

// options draws the lock options of one call: a fence perhaps, and
// auto-extension when kept.
func (w *worker) options(kept bool, extra ...redlock.LockOption) []redlock.LockOption {
	if w.fenced() {
		extra = append(extra, redlock.WithFencing())
	}
	if kept {
		extra = append(extra, redlock.WithAutoExtend(0))
	}
	return extra
}

// lockKey and permitKey draw a key of each kind.
func (w *worker) lockKey() string   { return w.r.locks[w.rng.IntN(len(w.r.locks))] }
func (w *worker) permitKey() string { return w.r.permits[w.rng.IntN(len(w.r.permits))] }

// acquire records the lock call desc on hd's keys, makes it with take (its
// context ends after a drawn wait when waiting), and uses the Lock it
// returns (use).
func (w *worker) acquire(hd hold, desc string, ttl time.Duration, waiting, kept bool, take func(ctx context.Context) (*redlock.Lock, error)) {
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if waiting {
		wait := w.wait()
		desc += fmt.Sprintf(" wait=%v", wait)
		ctx, cancel = context.WithTimeout(ctx, wait)
	}
	hd.client, hd.called = w.c, w.r.nw.now()
	w.r.h.call(w.c, on(hd), "%s", desc)
	l, err := take(ctx)
	cancel()
	w.use(hd, ttl, l, err, kept)
}

// on names hd's keys in the history.
func on(hd hold) string { return strings.Join(hd.keys, "+") }

// use reports a lock call's result and, when it returned a lock, holds it
// for a drawn time (extending it once half way, perhaps, when it is not
// kept alive), then unlocks it.
func (w *worker) use(hd hold, ttl time.Duration, l *redlock.Lock, err error, kept bool) {
	key := on(hd)
	if err != nil {
		w.returned(key, err)
		return
	}
	hd.from = w.r.nw.now()
	w.r.h.note(w.c, key, "< ok until=%s fence=%d", w.at(l.Until()), l.Fence())
	w.r.h.tracef("c%d holds %s with token %s", w.c, key, l.Token())
	w.watch(key, ttl, w.timeout, l.Done(), l.Until, l.Err)
	valid := l.Until().Sub(w.r.nw.start.Add(hd.from))
	stop := hd.from + time.Duration(w.rng.Float64()*1.5*float64(valid))
	if kept {
		stop = hd.from + time.Duration(w.rng.Int64N(int64(4*valid)))
	} else if w.rng.IntN(3) == 0 {
		w.r.nw.sleepUntil(hd.from + (stop-hd.from)/2) // before or after the TTL ran out
		w.extend(key, l)
	}
	hd.fence = l.Fence()
	w.held(hd, stop, l.Done(), l.Until, l.Err)
	w.unlock(key, l)
}

// extend extends l by a drawn TTL.
func (w *worker) extend(key string, l *redlock.Lock) {
	ext := w.ttl()
	w.r.h.call(w.c, key, "Extend ttl=%v", ext)
	err := l.Extend(context.Background(), ext)
	w.r.h.note(w.c, key, "< %s until=%s", class(err), w.at(l.Until()))
}

// unlock unlocks l.
func (w *worker) unlock(key string, l *redlock.Lock) {
	w.r.h.call(w.c, key, "Unlock")
	err := l.Unlock(context.Background())
	w.returned(key, err)
}

// held acts as the holder hd until stop, or until done closes (a loss),
// then records the hold, cut at until().
func (w *worker) held(hd hold, stop time.Duration, done <-chan struct{}, until func() time.Time, lost func() error) {
	w.sleepOrDone(stop, done)
	hd.to = min(w.r.nw.now(), w.r.h.since(until()))
	w.r.h.held(hd)
	if err := lost(); err != nil {
		w.r.h.note(w.c, on(hd), "! %s", class(err))
	}
}

// watch checks, in a goroutine of the run's that ends when done closes
// (every handle's Done does, at its Unlock or Resign at the latest), that
// a loss of the handle on key is reported before until() and by the
// margin WithAutoExtend states: max(ttl/10, 2×timeout) before it, where
// ttl is the handle's and timeout its Client's node timeout, or at once
// for a handle obtained with less than the margin left. A nil done (a
// handle not kept alive) reports no loss. It is called as the handle is
// returned.
func (w *worker) watch(key string, ttl, timeout time.Duration, done <-chan struct{}, until func() time.Time, lost func() error) {
	if done == nil {
		return
	}
	got := w.r.nw.now()
	w.r.watchers.Go(func() {
		<-done
		err := lost()
		if !errors.Is(err, redlock.ErrLockLost) || errors.Is(err, redlock.ErrClosed) {
			return
		}
		at, end := w.r.nw.now(), w.r.h.since(until())
		margin := max(ttl/10, 2*timeout)
		if at >= end || at > max(end-margin, got) {
			w.r.h.flag(key, "c%d's loss on %s reported at %.6fs, not %v (the loss margin) before Until %.6fs", w.c, key, at.Seconds(), margin, end.Seconds())
		}
	})
}

// sleepOrDone sleeps until t since the run's start, or until done or
// also closes (a nil channel never does).
func (w *worker) sleepOrDone(t time.Duration, done <-chan struct{}, also ...<-chan struct{}) {
	timer := time.NewTimer(max(t-w.r.nw.now(), 0))
	defer timer.Stop()
	var other <-chan struct{}
	if len(also) > 0 {
		other = also[0]
	}
	select {
	case <-timer.C:
	case <-done:
	case <-other:
	}
}

// at formats a time on the virtual clock as seconds since the run's start.
func (w *worker) at(t time.Time) string {
	return fmt.Sprintf("%.6fs", w.r.h.since(t).Seconds())
}

// returned records a call's result by its class; the trace, if on, gets
// the whole error.
func (w *worker) returned(key string, err error) {
	w.r.h.note(w.c, key, "< %s", class(err))
	if err != nil {
		w.r.h.tracef("c%d's error on %s: %v", w.c, key, err)
	}
}

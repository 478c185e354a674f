package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	fencing bool          // locks are fenced (every node persists)
}

// run makes calls until the run's span has passed, then closes the Client.
func (w *worker) run() {
	defer w.client.Close()
	for w.r.nw.now() < w.r.span {
		time.Sleep(time.Duration(w.rng.Int64N(int64(300 * time.Millisecond))))
		key := w.r.keys[w.rng.IntN(len(w.r.keys))]
		switch w.rng.IntN(4) {
		case 0:
			w.tryLock(key)
		case 1:
			w.lock(key)
		case 2:
			w.do(key)
		default:
			w.keep(key)
		}
	}
}

// ttl draws a TTL a lock kept alive accepts with this Client's node
// timeout: over three times the node timeout, plus room.
func (w *worker) ttl() time.Duration {
	lo := 4*w.timeout + 100*time.Millisecond
	return lo + time.Duration(w.rng.Int64N(int64(2*time.Second)))
}

// options draws the lock options of one call.
func (w *worker) options(extra ...redlock.LockOption) []redlock.LockOption {
	if w.fencing && w.rng.IntN(2) == 0 {
		extra = append(extra, redlock.WithFencing())
	}
	return extra
}

// tryLock takes key with TryLock, holds it a while (extending it once,
// perhaps), and unlocks it.
func (w *worker) tryLock(key string) {
	ttl := w.ttl()
	w.r.h.call(w.c, key, "TryLock ttl=%v", ttl)
	l, err := w.client.TryLock(context.Background(), key, ttl, w.options()...)
	w.held(key, l, err, false)
}

// lock takes key with Lock, waiting up to a drawn deadline.
func (w *worker) lock(key string) {
	ttl := w.ttl()
	wait := time.Duration(w.rng.Int64N(int64(3 * time.Second)))
	w.r.h.call(w.c, key, "Lock ttl=%v wait=%v", ttl, wait)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	l, err := w.client.Lock(ctx, key, ttl, w.options()...)
	w.held(key, l, err, false)
}

// keep takes key with TryLock and WithAutoExtend, and holds it for a time
// that may span several TTLs, or until the lock is lost.
func (w *worker) keep(key string) {
	ttl := w.ttl()
	w.r.h.call(w.c, key, "TryLock+AutoExtend ttl=%v", ttl)
	l, err := w.client.TryLock(context.Background(), key, ttl, w.options(redlock.WithAutoExtend(0))...)
	w.held(key, l, err, true)
}

// held reports a lock call's result and, when it returned a lock, holds it
// for a drawn time, then unlocks it.
func (w *worker) held(key string, l *redlock.Lock, err error, kept bool) {
	if err != nil {
		w.r.h.note(w.c, key, "< %s", class(err))
		return
	}
	from := w.r.nw.now()
	w.r.h.note(w.c, key, "< ok until=%s fence=%d", w.at(l.Until()), l.Fence())
	w.r.h.tracef("c%d holds %s with token %s", w.c, key, l.Token())
	ttl := l.Until().Sub(w.r.nw.start.Add(from))
	stop := w.r.nw.now() + time.Duration(w.rng.Float64()*1.5*float64(ttl))
	if kept {
		stop = w.r.nw.now() + time.Duration(w.rng.Int64N(int64(4*ttl)))
	} else if w.rng.IntN(3) == 0 {
		// Extend half way, before or after the TTL ran out.
		w.r.nw.sleepUntil(from + (stop-from)/2)
		ext := w.ttl()
		w.r.h.call(w.c, key, "Extend ttl=%v", ext)
		err := l.Extend(context.Background(), ext)
		w.r.h.note(w.c, key, "< %s until=%s", class(err), w.at(l.Until()))
	}
	w.sleepOrDone(stop, l.Done())
	w.r.h.held(hold{client: w.c, key: key, from: from, to: min(w.r.nw.now(), w.r.h.since(l.Until())), fence: l.Fence()})
	if l.Err() != nil {
		w.r.h.note(w.c, key, "! %s", class(l.Err()))
	}
	w.r.h.call(w.c, key, "Unlock")
	err = l.Unlock(context.Background())
	w.r.h.note(w.c, key, "< %s", class(err))
}

// do runs Do on key with a function that works for a drawn time or until
// its context ends.
func (w *worker) do(key string) {
	ttl := w.ttl()
	w.r.h.call(w.c, key, "Do ttl=%v", ttl)
	work := time.Duration(w.rng.Int64N(int64(3 * ttl)))
	var opts []redlock.LockOption
	if w.fencing && w.rng.IntN(2) == 0 {
		opts = append(opts, redlock.WithFencing())
	}
	wait := time.Duration(w.rng.Int64N(int64(3 * time.Second)))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err := w.client.Do(ctx, key, ttl, func(ctx context.Context) error {
		from := w.r.nw.now()
		w.r.h.note(w.c, key, "  fn starts")
		w.r.h.tracef("c%d's Do holds %s", w.c, key)
		w.sleepOrDone(from+work, ctx.Done())
		w.r.h.held(hold{client: w.c, key: key, from: from, to: w.r.nw.now()})
		return ctx.Err()
	}, opts...)
	w.r.h.note(w.c, key, "< %s", class(err))
}

// sleepOrDone sleeps until t since the run's start, or until done closes.
func (w *worker) sleepOrDone(t time.Duration, done <-chan struct{}) {
	timer := time.NewTimer(max(t-w.r.nw.now(), 0))
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-done:
	}
}

// at formats a time on the virtual clock as seconds since the run's start.
func (w *worker) at(t time.Time) string {
	return fmt.Sprintf("%.6fs", w.r.h.since(t).Seconds())
}

package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/redlockgo/redlock/redlock"
)

// resume takes a lock with TryLock (auto-extended one time in three), and
// after a drawn time another Client, created for it as a restarted process
// would be, resumes it with Resume and a TTL of its own (shorter or
// longer; shorter one time in two); both handles then act as the holder,
// one group, until a drawn time (each within its own Until), and are
// unlocked in a drawn order.
func (w *worker) resume() {
	key, ttl, kept := w.lockKey(), w.ttl(), w.rng.IntN(3) == 0
	fenced := w.fenced()
	w.groups++
	group := fmt.Sprintf("c%d's resumed #%d", w.c, w.groups)
	first := hold{client: w.c, kind: exclusive, keys: []string{key}, group: group, called: w.r.nw.now()}
	w.r.h.call(w.c, key, "TryLock ttl=%v kept=%v (to resume)", ttl, kept)
	l, err := w.client.TryLock(context.Background(), key, ttl, w.fencing(fenced, kept)...)
	if err != nil {
		w.returned(key, err)
		return
	}
	first.from, first.fence = w.r.nw.now(), l.Fence()
	w.r.h.note(w.c, key, "< ok until=%s fence=%d", w.at(l.Until()), l.Fence())
	w.watch(key, ttl, w.timeout, l.Done(), l.Until, l.Err)
	handoff := first.from + time.Duration(w.rng.Int64N(int64(ttl)))
	w.sleepOrDone(handoff, l.Done())

	timeout := w.r.timeout(w.rng)
	rc := w.spawn(timeout)
	defer rc.Close()
	ttl2, kept2 := w.ttlFor(timeout), w.rng.IntN(2) == 0
	if lo := 4*timeout + 100*time.Millisecond; ttl > lo && w.rng.IntN(2) == 0 {
		ttl2 = lo + time.Duration(w.rng.Int64N(int64(ttl-lo))) // shorter than the hold's
	}
	second := hold{client: w.c, kind: exclusive, keys: []string{key}, group: group, called: w.r.nw.now()}
	w.r.h.call(w.c, key, "Resume ttl=%v kept=%v timeout=%v", ttl2, kept2, timeout)
	l2, err := rc.Resume(context.Background(), key, l.Token(), ttl2, w.fencing(fenced, kept2)...)
	if err != nil {
		w.returned(key, err)
		w.held(first, w.r.nw.now(), nil, l.Until, l.Err)
		w.unlock(key, l)
		return
	}
	second.from, second.fence = w.r.nw.now(), l2.Fence()
	w.r.h.note(w.c, key, "< ok until=%s fence=%d", w.at(l2.Until()), l2.Fence())
	w.watch(key, ttl2, timeout, l2.Done(), l2.Until, l2.Err)
	if fenced && l2.Fence() <= l.Fence() {
		w.r.h.flag(key, "resumed fence %d not above the hold's %d", l2.Fence(), l.Fence())
	}
	stop := second.from + time.Duration(w.rng.Int64N(int64(2*max(ttl, ttl2))))
	w.heldBoth(first, second, stop, l, l2)
	a, b := l, l2
	if w.rng.IntN(2) == 0 {
		a, b = l2, l
	}
	w.unlock(key, a)
	w.unlock(key, b)
}

// heldBoth acts as the holder through two handles of one hold until stop,
// or until either is lost, and records both holds.
func (w *worker) heldBoth(a, b hold, stop time.Duration, la, lb *redlock.Lock) {
	w.sleepOrDone(stop, la.Done(), lb.Done())
	w.held(a, w.r.nw.now(), nil, la.Until, la.Err)
	w.held(b, w.r.nw.now(), nil, lb.Until, lb.Err)
}

// fencing is the options of a call whose fence and auto-extension were drawn.
func (w *worker) fencing(fenced, kept bool) []redlock.LockOption {
	var opts []redlock.LockOption
	if fenced {
		opts = append(opts, redlock.WithFencing())
	}
	if kept {
		opts = append(opts, redlock.WithAutoExtend(0))
	}
	return opts
}

// spawn creates a Client with node timeout timeout on the worker's
// machine (faulted as the worker's Client), with links of its own.
func (w *worker) spawn(timeout time.Duration) *redlock.Client {
	w.spawned++
	return w.r.client(w.c, (w.c+1)*16+w.spawned, timeout)
}

// owner takes a key WithOwner (TryLock or Lock), re-enters it a drawn time
// later with a second hold of the same owner, holds both (one group) and
// gives them back at drawn times, in either order.
func (w *worker) owner() {
	key, owner, fenced := w.lockKey(), fmt.Sprintf("owner-c%d", w.c), w.fenced()
	w.groups++
	group := fmt.Sprintf("owner c%d #%d", w.c, w.groups)
	take := func() (hold, *redlock.Lock) {
		ttl, waiting := w.ttl(), w.rng.IntN(2) == 0
		hd := hold{client: w.c, kind: exclusive, keys: []string{key}, group: group, called: w.r.nw.now()}
		opts := append(w.fencing(fenced, false), redlock.WithOwner(owner))
		var l *redlock.Lock
		var err error
		if waiting {
			wait := w.wait()
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			w.r.h.call(w.c, key, "Lock owner ttl=%v wait=%v", ttl, wait)
			l, err = w.client.Lock(ctx, key, ttl, opts...)
			cancel()
		} else {
			w.r.h.call(w.c, key, "TryLock owner ttl=%v", ttl)
			l, err = w.client.TryLock(context.Background(), key, ttl, opts...)
		}
		if err != nil {
			w.returned(key, err)
			return hd, nil
		}
		hd.from, hd.fence = w.r.nw.now(), l.Fence()
		w.r.h.note(w.c, key, "< ok until=%s fence=%d", w.at(l.Until()), l.Fence())
		return hd, l
	}
	h1, l1 := take()
	if l1 == nil {
		return
	}
	ttl := l1.Until().Sub(w.r.nw.start.Add(h1.from))
	w.r.nw.sleepUntil(h1.from + time.Duration(w.rng.Int64N(int64(ttl))))
	// The second hold is a re-entry, or, once the first has run out on the
	// nodes, a first hold again: either way one holder with the first for
	// the checker, as no other holder came between. A re-entry shares the
	// owner's fence; a first hold again has a greater one.
	h2, l2 := take()
	switch {
	case l2 == nil || !fenced:
	case h2.from < w.r.h.since(l1.Until()) && l2.Fence() != l1.Fence():
		w.r.h.flag(key, "an owner's holds at once have fences %d and %d, not one", l1.Fence(), l2.Fence())
	case l2.Fence() < l1.Fence():
		w.r.h.flag(key, "an owner's second hold has fence %d, below its first's %d", l2.Fence(), l1.Fence())
	}
	type held struct {
		hd hold
		l  *redlock.Lock
	}
	hs := []held{{h1, l1}}
	if l2 != nil {
		hs = append(hs, held{h2, l2})
	}
	if len(hs) == 2 && w.rng.IntN(2) == 0 {
		hs[0], hs[1] = hs[1], hs[0]
	}
	for _, h := range hs {
		stop := w.r.nw.now() + time.Duration(w.rng.Int64N(int64(ttl)))
		w.held(h.hd, stop, nil, h.l.Until, h.l.Err)
		w.unlock(key, h.l)
	}
}

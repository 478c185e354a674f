package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/redlockgo/redlock/redlock"
)

// exclusive takes a key with TryLock, Lock (a bounded wait), Do, TryDo or
// TryLock with WithAutoExtend (held for a time that may span several
// TTLs, or until the lock is lost).
func (w *worker) exclusive() {
	key, ttl := w.lockKey(), w.ttl()
	hd := hold{kind: exclusive, keys: []string{key}}
	switch w.rng.IntN(5) {
	case 0:
		w.acquire(hd, fmt.Sprintf("TryLock ttl=%v", ttl), ttl, false, false, func(ctx context.Context) (*redlock.Lock, error) {
			return w.client.TryLock(ctx, key, ttl, w.options(false)...)
		})
	case 1:
		w.acquire(hd, fmt.Sprintf("Lock ttl=%v", ttl), ttl, true, false, func(ctx context.Context) (*redlock.Lock, error) {
			return w.client.Lock(ctx, key, ttl, w.options(false)...)
		})
	case 2:
		w.acquire(hd, fmt.Sprintf("TryLock+AutoExtend ttl=%v", ttl), ttl, false, true, func(ctx context.Context) (*redlock.Lock, error) {
			return w.client.TryLock(ctx, key, ttl, w.options(true)...)
		})
	case 3:
		w.do(hd, fmt.Sprintf("Do ttl=%v", ttl), true, ttl, func(ctx context.Context, fn func(context.Context) error) error {
			return w.client.Do(ctx, key, ttl, fn, w.options(false)...)
		})
	default:
		w.do(hd, fmt.Sprintf("TryDo ttl=%v", ttl), false, ttl, func(ctx context.Context, fn func(context.Context) error) error {
			return w.client.TryDo(ctx, key, ttl, fn, w.options(false)...)
		})
	}
}

// do records the call desc on hd's keys and makes it with run (Do, TryDo,
// DoAll, Lead; its context ends after a drawn wait when waiting), with a
// function that holds hd from its start for a drawn time, up to three TTLs,
// or until its context ends: the function's context is the holder's word,
// since Do, DoAll and Lead hand out no Until.
func (w *worker) do(hd hold, desc string, waiting bool, ttl time.Duration, run func(ctx context.Context, fn func(context.Context) error) error) {
	key := on(hd)
	work := time.Duration(w.rng.Int64N(int64(3 * ttl)))
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if waiting {
		wait := w.wait()
		desc += fmt.Sprintf(" wait=%v", wait)
		ctx, cancel = context.WithTimeout(ctx, wait)
	}
	defer cancel()
	hd.client, hd.called = w.c, w.r.nw.now()
	w.r.h.call(w.c, key, "%s", desc)
	err := run(ctx, func(ctx context.Context) error {
		hd.from = w.r.nw.now()
		w.r.h.note(w.c, key, "  fn starts")
		w.r.h.tracef("c%d's %s holds %s", w.c, desc, key)
		w.sleepOrDone(hd.from+work, ctx.Done())
		hd.to = w.r.nw.now()
		w.r.h.held(hd)
		return ctx.Err()
	})
	w.returned(key, err)
}

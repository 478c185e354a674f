package sim

import (
	"context"
	"fmt"
	"slices"

	"github.com/redlockgo/redlock/redlock"
)

// read takes a reader's hold on a lock key with TryRLock or RLock (a
// bounded wait), auto-extended one time in three.
func (w *worker) read() {
	key, ttl, kept := w.lockKey(), w.ttl(), w.rng.IntN(3) == 0
	hd := hold{kind: reader, keys: []string{key}}
	if w.rng.IntN(2) == 0 {
		w.acquire(hd, fmt.Sprintf("TryRLock ttl=%v kept=%v", ttl, kept), ttl, false, kept, func(ctx context.Context) (*redlock.Lock, error) {
			return w.client.TryRLock(ctx, key, ttl, w.options(kept)...)
		})
		return
	}
	w.acquire(hd, fmt.Sprintf("RLock ttl=%v kept=%v", ttl, kept), ttl, true, kept, func(ctx context.Context) (*redlock.Lock, error) {
		return w.client.RLock(ctx, key, ttl, w.options(kept)...)
	})
}

// permit takes one of a permit key's permits (its run's limit) with
// TryAcquirePermit or AcquirePermit (a bounded wait), auto-extended one
// time in three.
func (w *worker) permit() {
	key, ttl, kept := w.permitKey(), w.ttl(), w.rng.IntN(3) == 0
	limit := w.r.limits[key]
	hd := hold{kind: permit, keys: []string{key}}
	if w.rng.IntN(2) == 0 {
		w.acquire(hd, fmt.Sprintf("TryAcquirePermit limit=%d ttl=%v kept=%v", limit, ttl, kept), ttl, false, kept, func(ctx context.Context) (*redlock.Lock, error) {
			return w.client.TryAcquirePermit(ctx, key, limit, ttl, w.options(kept)...)
		})
		return
	}
	w.acquire(hd, fmt.Sprintf("AcquirePermit limit=%d ttl=%v kept=%v", limit, ttl, kept), ttl, true, kept, func(ctx context.Context) (*redlock.Lock, error) {
		return w.client.AcquirePermit(ctx, key, limit, ttl, w.options(kept)...)
	})
}

// multi takes a drawn set of the lock keys at once with TryLockAll,
// LockAll (a bounded wait; auto-extended one time in three) or DoAll.
func (w *worker) multi() {
	var keys []string
	for _, k := range w.r.locks {
		if w.rng.IntN(2) == 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		keys = append(keys, w.lockKey())
	}
	ttl := w.ttl()
	hd := hold{kind: exclusive, keys: slices.Sorted(slices.Values(keys))}
	switch w.rng.IntN(3) {
	case 0:
		w.acquire(hd, fmt.Sprintf("TryLockAll ttl=%v", ttl), ttl, false, false, func(ctx context.Context) (*redlock.Lock, error) {
			return w.client.TryLockAll(ctx, keys, ttl, w.options(false)...)
		})
	case 1:
		kept := w.rng.IntN(3) == 0
		w.acquire(hd, fmt.Sprintf("LockAll ttl=%v kept=%v", ttl, kept), ttl, true, kept, func(ctx context.Context) (*redlock.Lock, error) {
			return w.client.LockAll(ctx, keys, ttl, w.options(kept)...)
		})
	default:
		w.do(hd, fmt.Sprintf("DoAll ttl=%v", ttl), true, ttl, func(ctx context.Context, fn func(context.Context) error) error {
			return w.client.DoAll(ctx, keys, ttl, fn, w.options(false)...)
		})
	}
}

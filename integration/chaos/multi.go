package chaos

import (
	"context"
	"time"
)

// defaultMultiEvery is Config.MultiEvery's default: about one iteration in
// four of a worker with two keys or more takes two of them with LockAll.
const defaultMultiEvery = 4

// multiIteration is one hold of two distinct keys of the worker's taken
// together with LockAll, over the same keys the single-key holds use, so
// multi-locks overlap with each other and with single locks. Each key's
// counter is updated under the hold, and the hold is recorded once per key:
// the checker then finds any overlap of a multi-lock with another holder
// of one of its keys. The pauser, in an unsafe run, misbehaves here too.
func (w *worker) multiIteration(ctx context.Context) {
	i := w.rng.IntN(len(w.keys))
	j := (i + 1 + w.rng.IntN(len(w.keys)-1)) % len(w.keys)
	ttl := w.ttl
	if w.role == pauser {
		ttl = pauserTTL
	}
	c := claim{workload: Multi, keys: []string{w.keys[i], w.keys[j]}}
	l, begin, ok := w.take(ctx, c, ttl, nil)
	if !ok {
		return
	}
	w.stats.multi.Add(1)
	start := time.Now()
	for _, k := range l.Keys() {
		w.update(k, Multi, l, func() { time.Sleep(workTime(w.rng)) })
	}
	w.release(l, c, begin, start)
}

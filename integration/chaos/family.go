package chaos

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/redlockgo/redlock/redlock"
)

// Defaults of the read/write and permit workloads (see Config).
const (
	defaultRWClients     = 4
	defaultRWKeys        = 2
	defaultWriteEvery    = 4
	defaultPermitClients = 4
	defaultPermitLimit   = 2
)

// claim is what one acquisition asks for, and how its holds are recorded.
type claim struct {
	workload Workload
	keys     []string // one key, or a multi-lock's keys
	shared   bool     // a reader (RLock)
	limit    int      // a permit of limit (AcquirePermit); 0 otherwise
}

// writes reports whether the claim's holder may write the key's counter:
// readers and permit holders share their key, so they never do.
func (c claim) writes() bool { return !c.shared && c.limit == 0 }

// take acquires c for ttl with the blocking call that fits it, bounded by
// lockWait, recording when the call began.
func (w *worker) take(ctx context.Context, c claim, ttl time.Duration, opts []redlock.LockOption) (*redlock.Lock, time.Time, bool) {
	lctx, cancel := context.WithTimeout(ctx, lockWait)
	defer cancel()
	begin := time.Now()
	l, err := w.acquire(lctx, c, ttl, opts, false)
	if err != nil {
		w.stats.fail(err)
		return nil, begin, false
	}
	return l, begin, true
}

// acquire calls the acquisition that fits c: the blocking one, or with
// try the one that makes a single attempt (TryLock and its kin).
func (w *worker) acquire(ctx context.Context, c claim, ttl time.Duration, opts []redlock.LockOption, try bool) (*redlock.Lock, error) {
	if w.fencing {
		opts = append(opts, redlock.WithFencing())
	}
	cl := w.client
	switch {
	case c.workload == Multi && try:
		return cl.TryLockAll(ctx, c.keys, ttl, opts...)
	case c.workload == Multi:
		return cl.LockAll(ctx, c.keys, ttl, opts...)
	case c.shared && try:
		return cl.TryRLock(ctx, c.keys[0], ttl, opts...)
	case c.shared:
		return cl.RLock(ctx, c.keys[0], ttl, opts...)
	case c.limit > 0 && try:
		return cl.TryAcquirePermit(ctx, c.keys[0], c.limit, ttl, opts...)
	case c.limit > 0:
		return cl.AcquirePermit(ctx, c.keys[0], c.limit, ttl, opts...)
	case try:
		return cl.TryLock(ctx, c.keys[0], ttl, opts...)
	}
	return cl.Lock(ctx, c.keys[0], ttl, opts...)
}

// rwIteration is one hold of a read/write key: about one in writeEvery a
// writer (Lock) that updates the key's counter, the others readers
// (RLock) that hold it a while, so that readers overlap one another.
func (w *worker) rwIteration(ctx context.Context) {
	c := claim{workload: RW, keys: []string{w.keys[w.rng.IntN(len(w.keys))]}}
	if w.rng.IntN(w.writeEvery) != 0 {
		c.shared = true
		w.holdAWhile(ctx, c)
		return
	}
	l, begin, ok := w.take(ctx, c, w.ttl, nil)
	if !ok {
		return
	}
	start := time.Now()
	w.update(c.keys[0], RW, l, func() { time.Sleep(workTime(w.rng)) })
	w.release(l, c, begin, start)
}

// permitIteration is one permit of the worker's key, held a while.
func (w *worker) permitIteration(ctx context.Context) {
	w.holdAWhile(ctx, claim{workload: Permits, keys: []string{w.keys[0]}, limit: w.limit})
}

// holdAWhile takes c, relies on it for sharedTime, and releases it.
func (w *worker) holdAWhile(ctx context.Context, c claim) {
	l, begin, ok := w.take(ctx, c, w.ttl, nil)
	if !ok {
		return
	}
	start := time.Now()
	time.Sleep(sharedTime(w.rng))
	w.release(l, c, begin, start)
}

// sharedTime is how long a reader or a permit holder relies on its hold:
// longer than an update, so that holders of one key overlap.
func sharedTime(rng *rand.Rand) time.Duration {
	return 5*time.Millisecond + durN(rng, 15*time.Millisecond)
}

// permitKeys is the permit workload's key: a Redis hash on the nodes, so
// apart from every lock key.
var permitKeys = []string{"chaos:permit:0"}

func (c Config) rwKeys() []string { return keyNames("chaos:rw:", c.RWKeys) }

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
	if w.fencing {
		opts = append(opts, redlock.WithFencing())
	}
	lctx, cancel := context.WithTimeout(ctx, lockWait)
	defer cancel()
	begin := time.Now()
	var l *redlock.Lock
	var err error
	switch {
	case c.workload == Multi:
		l, err = w.client.LockAll(lctx, c.keys, ttl, opts...)
	case c.shared:
		l, err = w.client.RLock(lctx, c.keys[0], ttl, opts...)
	case c.limit > 0:
		l, err = w.client.AcquirePermit(lctx, c.keys[0], c.limit, ttl, opts...)
	default:
		l, err = w.client.Lock(lctx, c.keys[0], ttl, opts...)
	}
	if err != nil {
		w.stats.fail(err)
		return nil, begin, false
	}
	return l, begin, true
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

// victimClaims are the holds the victim of an unsafe run keeps through the
// restart of a majority, one workload after another, so that each workload
// sees the hazard: key 0 alone, keys 1 and 2 together (with three keys or
// more), the first read/write key as a writer, and every permit of the
// permit key.
func (c Config) victimClaims() []claim {
	ordinary := c.ordinaryKeys()
	out := []claim{{workload: Exclusive, keys: ordinary[:1]}}
	if c.MultiEvery > 0 && c.Keys >= 3 {
		out = append(out, claim{workload: Multi, keys: ordinary[1:3]})
	}
	if c.RWClients > 0 {
		out = append(out, claim{workload: RW, keys: c.rwKeys()[:1]})
	}
	if c.PermitClients > 0 {
		for range c.PermitLimit {
			out = append(out, claim{workload: Permits, keys: permitKeys, limit: c.PermitLimit})
		}
	}
	return out
}

// permitKeys is the permit workload's key: a Redis hash on the nodes, so
// apart from every lock key.
var permitKeys = []string{"chaos:permit:0"}

func (c Config) rwKeys() []string { return keyNames("chaos:rw:", c.RWKeys) }

// heldClaim is one of the victim's holds.
type heldClaim struct {
	c            claim
	l            *redlock.Lock
	begin, start time.Time
}

// serve plays the victim of one amnesia round: it takes every victim claim
// it can, reads the counter its first hold guards, tells the nemesis, holds
// through the restart of a majority and a linger, then writes (as a holder
// whose lock is still valid is entitled to) and releases them all.
func (w *worker) serve(ctx context.Context, req amnesia) {
	var held []heldClaim
	for _, c := range w.victimClaims {
		if l, begin, ok := w.take(ctx, c, victimTTL, nil); ok {
			held = append(held, heldClaim{c: c, l: l, begin: begin, start: time.Now()})
		}
	}
	if len(held) == 0 {
		req.ready <- false
		return
	}
	ready := false
	work := func() {
		ready = true
		req.ready <- true
		select {
		case <-req.restarted:
		case <-time.After(victimTTL / 2):
		}
		time.Sleep(victimLinger) // others get in meanwhile
	}
	if first := held[0]; first.c.writes() {
		w.update(first.c.keys[0], first.c.workload, first.l, work)
	} else {
		work()
	}
	if !ready {
		req.ready <- false // the store failed before the work began
	}
	for _, h := range held {
		w.release(h.l, h.c, h.begin, h.start)
	}
}

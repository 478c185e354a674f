package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/redlock"
)

// role is how a worker behaves.
type role int

const (
	// honest: lock, read, work, check validity, write, unlock.
	honest role = iota
	// pauser (unsafe runs): now and then, after its validity check passed,
	// sleeps past Until() before writing, as a process stopped by a GC
	// pause would, and writes anyway.
	pauser
	// victim: the holder of the amnesia rounds (amnesia.go). On the
	// nemesis' request it takes a claim of every workload and keeps them
	// while a majority of nodes restart empty, then writes if still valid.
	// In the unsafe run the others get in; in the safe one they must not.
	victim
)

// stats counts what the workers saw besides the history.
type stats struct {
	failed   atomic.Int64 // Lock calls that returned an error
	readErrs atomic.Int64 // reads of the store that failed: no write followed
	skipped  atomic.Int64 // writes not made: the validity check failed
	long     atomic.Int64 // holds kept past the TTL by auto-extension
	lost     atomic.Int64 // of those, locks reported lost (ErrLockLost)
	multi    atomic.Int64 // multi-locks obtained (LockAll)

	reasonsMu sync.Mutex
	reasons   map[string]int // failed calls by failReason
}

// fail counts an acquisition call that returned err.
func (s *stats) fail(err error) {
	s.failed.Add(1)
	s.reasonsMu.Lock()
	defer s.reasonsMu.Unlock()
	if s.reasons == nil {
		s.reasons = make(map[string]int)
	}
	s.reasons[failReason(err)]++
}

// topReasons returns the n commonest reasons of failed calls, with their
// counts, commonest first.
func (s *stats) topReasons(n int) []string {
	s.reasonsMu.Lock()
	defer s.reasonsMu.Unlock()
	keys := slices.SortedFunc(maps.Keys(s.reasons), func(a, b string) int {
		return cmp.Or(cmp.Compare(s.reasons[b], s.reasons[a]), cmp.Compare(a, b))
	})
	out := make([]string, 0, n)
	for _, k := range keys[:min(n, len(keys))] {
		out = append(out, fmt.Sprintf("%dx %s", s.reasons[k], k))
	}
	return out
}

// failReason sums up why an acquisition failed: the context's end, if it
// ended, and what the nodes that did not agree said, counted by kind
// (e.g. "deadline; taken:2 timeout:1").
func failReason(err error) string {
	var b strings.Builder
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		b.WriteString("deadline")
	case errors.Is(err, context.Canceled):
		b.WriteString("canceled")
	}
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		if b.Len() == 0 {
			return err.Error()
		}
		return b.String()
	}
	counts := map[string]int{}
	for _, n := range qe.Nodes {
		counts[nodeReason(n.Err)]++
	}
	if b.Len() > 0 {
		b.WriteString("; ")
	}
	for j, k := range slices.Sorted(maps.Keys(counts)) {
		if j > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s:%d", k, counts[k])
	}
	if qe.Reason != "" {
		b.WriteString(" (" + qe.Reason + ")")
	}
	return b.String()
}

// nodeReason names what a node that did not agree said.
func nodeReason(err error) string {
	for _, r := range []struct {
		err  error
		name string
	}{
		{redlock.ErrTaken, "taken"}, {redlock.ErrNodeTimeout, "timeout"}, {redlock.ErrPending, "pending"},
		{redlock.ErrNodeQuarantined, "quarantined"}, {redlock.ErrNodeClock, "clock"},
		{redlock.ErrLockDelay, "delay"}, {redlock.ErrNotHeld, "not-held"},
	} {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	return "error"
}

// worker is one client of the lock with its own redlock.Client, pools and
// connections.
type worker struct {
	id      int
	role    role
	client  *redlock.Client
	keys    []string
	ttl     time.Duration
	fencing bool
	store   store
	rec     *recorder
	stats   *stats
	faults  *faultLog
	rng     *rand.Rand
	// longEvery: about one hold in longEvery outlives the TTL, kept alive
	// by WithAutoExtend; 0 never.
	longEvery int
	// multiEvery: about one iteration in multiEvery takes two keys with
	// LockAll (see multiIteration); 0 never.
	multiEvery int
	// workload is what the worker's iterations do: Exclusive (with a
	// multi-lock now and then, see multiEvery), RW or Permits.
	workload Workload
	// writeEvery: about one RW iteration in writeEvery is a writer.
	writeEvery int
	// limit is the Permits workload's limit.
	limit int
	// victim receives the nemesis' requests, and victimClaims are the
	// holds it keeps through each, with victimTTL (victim role only).
	victim       <-chan amnesia
	victimClaims []claim
	victimTTL    time.Duration
	// prober tries probes, against the holder's claims, from a Client of
	// its own once the nodes are back (probeAll); it runs no iterations.
	prober *worker
	probes []claim
	// after bounds the holder's claims after a quarantine (claimsAfter):
	// it ends recoverGrace after the run, so that a loaded machine's
	// slow recovery is waited for rather than judged absent.
	after context.Context
	// logf, when set, logs what the holder saw (Config.Logf).
	logf func(string, ...any)
	// leadTTL is the TTL of the election's leaderships but the holder's
	// (Config.electionTTL).
	leadTTL time.Duration
	// newClient replaces the Client of an election worker that killed its
	// leader (closed its Client without Resign); nil never kills.
	newClient func() *redlock.Client
	// lastKilled, shared by the election workers, is whether the last
	// leadership ended in a kill.
	lastKilled *atomic.Bool
	// hush, shared by every worker of a run, holds back new iterations
	// while the holder takes its claims (hush.go).
	hush *hush
}

// lockWait bounds one Lock call, so that a worker stuck behind a fault
// moves on to another key and notices the end of the run.
const lockWait = 5 * time.Second

// run loops until ctx ends. An iteration that has begun finishes, so that
// every hold is released and every write accounted for.
func (w *worker) run(ctx context.Context) {
	for ctx.Err() == nil {
		if w.role == victim {
			select {
			case <-ctx.Done():
				return
			case req := <-w.victim:
				w.serve(ctx, req)
			}
			continue
		}
		w.hush.wait(ctx)
		if ctx.Err() != nil {
			return
		}
		w.iteration(ctx)
	}
}

// iteration is one hold of a random key of the worker's workload.
func (w *worker) iteration(ctx context.Context) {
	switch w.workload {
	case RW:
		w.rwIteration(ctx)
		return
	case Permits:
		w.permitIteration(ctx)
		return
	case Election:
		w.electionIteration(ctx)
		return
	}
	if w.multiEvery > 0 && len(w.keys) >= 2 && w.rng.IntN(w.multiEvery) == 0 {
		w.multiIteration(ctx)
		return
	}
	key := w.keys[w.rng.IntN(len(w.keys))]
	ttl := w.ttl
	var opts []redlock.LockOption
	long := w.role == honest && w.longEvery > 0 && w.rng.IntN(w.longEvery) == 0
	if long {
		opts = append(opts, redlock.WithAutoExtend(0))
	}
	if w.role == pauser {
		// A short TTL, so that a pause past validity is short too.
		ttl = pauserTTL
	}
	c := claim{workload: Exclusive, keys: []string{key}}
	l, begin, ok := w.take(ctx, c, ttl, opts)
	if !ok {
		return
	}
	start := time.Now()
	w.update(key, Exclusive, l, func() {
		if long {
			// Work for 1.5 TTLs, unless the lock is lost first.
			w.stats.long.Add(1)
			t := time.NewTimer(w.ttl * 3 / 2)
			defer t.Stop()
			select {
			case <-t.C:
			case <-l.Done():
				w.stats.lost.Add(1)
			}
			return
		}
		time.Sleep(workTime(w.rng))
	})
	w.release(l, c, begin, start)
}

// update is the read-modify-write of key's counter under l: read, work,
// check validity, write. The store is reached with a context of its own,
// so that the end of the run never cuts a write in half.
func (w *worker) update(key string, wl Workload, l *redlock.Lock, work func()) {
	ctx := context.Background()
	v, err := w.store.read(ctx, key)
	if err != nil {
		w.stats.readErrs.Add(1)
		return
	}
	work()
	if l.Err() != nil || !time.Now().Before(l.Until()) {
		w.stats.skipped.Add(1) // the protocol: never write after Until()
		return
	}
	if w.role == pauser && w.rng.IntN(pauseEvery) == 0 {
		// The check passed, then the process stops: a GC pause, a SIGSTOP.
		w.faults.add(clientPause)
		time.Sleep(time.Until(l.Until()) + pauseBeyond)
	}
	sent := time.Now()
	out := w.store.write(ctx, key, v+1, l.Fence())
	w.rec.write(Write{Key: key, Client: w.id, Fence: l.Fence(), Sent: sent, Done: time.Now(), Outcome: out, Workload: wl})
}

// release records the hold, then unlocks. The hold ends when the worker
// stops relying on the lock: now, or Until() if that came first.
func (w *worker) release(l *redlock.Lock, c claim, begin, start time.Time) {
	end := time.Now()
	if u := l.Until(); u.Before(end) {
		end = u
	}
	for _, k := range l.Keys() { // one key, or every key of a multi-lock
		w.rec.hold(Hold{Key: k, Client: w.id, Begin: begin, Start: start, End: end, Fence: l.Fence(),
			Workload: c.workload, Shared: c.shared, Limit: c.limit})
	}
	_ = l.Unlock(context.Background()) // errors are expected under faults: copies expire
}

// workTime is the pause between read and write of an ordinary hold.
func workTime(rng *rand.Rand) time.Duration {
	return time.Millisecond + durN(rng, 2*time.Millisecond)
}

// durN returns a random duration in [0, d).
func durN(rng *rand.Rand, d time.Duration) time.Duration {
	return time.Duration(rng.Int64N(int64(d)))
}

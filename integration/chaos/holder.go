package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/redlock"
)

// The holder's side of an amnesia round (amnesia.go): the claims it keeps
// through the restart of a majority, and its prober's attempts to get in.

// probe is one acquisition the holder's prober tried, from a Client of its
// own, while the holder held the same claim and the nodes were back: err
// nil means it got in (a violation the checker reports).
type probe struct {
	workload Workload
	err      error
}

func (p probe) String() string {
	if p.err == nil {
		return p.workload.String() + " GOT IN"
	}
	return fmt.Sprintf("%s refused (%s)", p.workload, failReason(p.err))
}

// victimClaims are the holds the holder keeps through the restart of a
// majority, one workload after another, so that each workload meets the
// case: key 0 alone, keys 1 and 2 together (with three keys or more), the
// first read/write key as a writer, every permit of the permit key, and
// the leadership of the election. A new workload adds its claim here and
// its call in takeClaims and probeAll; TestVictimClaimsCoverEveryWorkload
// fails until it does.
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
	if c.ElectionClients > 0 {
		out = append(out, claim{workload: Election, keys: electionNames})
	}
	return out
}

// heldClaim is one of the holder's holds: a lock, or (the election's
// claim) a leadership.
type heldClaim struct {
	c            claim
	l            *redlock.Lock
	ls           *redlock.Leadership
	begin, start time.Time
}

func (h heldClaim) until() time.Time {
	if h.ls != nil {
		return h.ls.Until()
	}
	return h.l.Until()
}

// valid reports whether the hold is still guaranteed at now. A leadership
// is kept alive by extensions, which the forgetting majority refuses: it
// is then reported lost (Err), early, as the loss margin wants, and is
// still guaranteed until Until; a lock of the holder is never extended.
func (h heldClaim) valid(now time.Time) bool {
	if h.ls != nil {
		return now.Before(h.ls.Until())
	}
	return h.l.Err() == nil && now.Before(h.l.Until())
}

// releaseHeld records h and releases it (Unlock, or Resign).
func (w *worker) releaseHeld(h heldClaim) {
	if h.ls != nil {
		w.resign(h.ls, h.c.keys[0], h.begin, h.start)
		return
	}
	w.release(h.l, h.c, h.begin, h.start)
}

// takeClaim takes c with ttl: a Campaign for the election's claim, else
// the lock that fits it.
func (w *worker) takeClaim(ctx context.Context, c claim, ttl time.Duration) (heldClaim, bool) {
	if c.workload == Election {
		ls, begin, err := w.lead(ctx, c.keys[0], ttl, lockWait)
		if err != nil {
			w.stats.fail(err)
		}
		return heldClaim{c: c, ls: ls, begin: begin, start: time.Now()}, err == nil
	}
	l, begin, ok := w.take(ctx, c, ttl, nil)
	return heldClaim{c: c, l: l, begin: begin, start: time.Now()}, ok
}

// serve plays the holder of one amnesia round: it takes every claim (the
// other workers hushed meanwhile: hush.go), reads
// the counter its first hold guards, tells the nemesis, holds through the
// restart of a majority, has its prober try each workload once, lingers
// while the other workers try, reports which claims are still valid, then
// writes (as a holder whose lock is still valid is entitled to, and only
// then) and releases them all.
func (w *worker) serve(ctx context.Context, req amnesia) {
	w.hush.begin()
	held, err := w.takeClaims(ctx)
	w.hush.end()
	if err != nil {
		req.ready <- err
		return
	}
	ready := false
	work := func() {
		ready = true
		req.ready <- nil
		<-req.restarted // the nemesis always closes it after a nil ready
		var probes []probe
		if w.prober != nil {
			probes = w.prober.probeAll(w.probes)
		}
		time.Sleep(victimLinger) // the others try meanwhile
		req.held <- holderReport{valid: validWorkloads(held, time.Now()), probes: probes}
	}
	if first := held[0]; first.c.writes() {
		w.update(first.c.keys[0], first.c.workload, first.l, work)
	} else {
		work()
	}
	if !ready {
		req.ready <- errors.New("could not read the counter of its first claim")
	}
	for _, h := range held {
		w.releaseHeld(h)
	}
	if ready {
		w.claimsAfter(ctx, w.after, <-req.over)
	}
}

// claimsAfter takes the holder's own claim of every workload again (its
// probe claims, on keys nobody else uses) once the round's quarantine is
// over, at over, and records each: the evidence that every workload takes
// locks again after the quarantine (Result.Unexercised). Each claim is tried until it is held or after
// ends (recoverGrace past the run's duration, see Run), not only until
// the run (ctx) ends; a quarantine that ends after the run is not waited
// for.
//
// The workers' own calls are not enough evidence. A multi-lock does not
// queue, and on keys whose queues of single-key waiters never empty (the
// ordinary keys, under ten workers) it waits while the keys pass from one
// single-key holder to the next (docs/multilock.md): a smoke run's workers
// took 1 to 6 multi-locks in 30s, none at all in the 9s after the
// quarantine in one of four runs. And on a loaded machine (two CPU hogs, a
// race build of the redlock tests beside, five containers: load average
// 12 on two cores) the exclusive and permits workers took no lock in the
// 8s between the quarantine's end and the run's, 88 of their calls failing
// with all five nodes past the 1s node timeout: the machine's doing, not
// the quarantine's, which only a claim taken after it can tell apart.
func (w *worker) claimsAfter(ctx, after context.Context, over time.Time) {
	t := time.NewTimer(time.Until(over))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return // a quarantine that outlasts the run is not judged
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var took []string
	for _, c := range w.probes { // one of each workload (probeClaims)
		wg.Go(func() {
			ttl := w.ttl
			if c.workload == Election {
				ttl = w.leadTTL
			}
			for after.Err() == nil {
				if h, ok := w.takeClaim(after, c, ttl); ok {
					w.releaseHeld(h)
					mu.Lock()
					took = append(took, fmt.Sprintf("%s %v", c.workload, h.start.Sub(over).Round(time.Millisecond)))
					mu.Unlock()
					return
				}
				select { // a refusal that came at once is not tried again at once
				case <-time.After(100 * time.Millisecond):
				case <-after.Done():
				}
			}
		})
	}
	wg.Wait()
	if w.logf != nil {
		w.logf("holder: its own claims taken again after the quarantine ended, and when: %v (of %d)", took, len(w.probes))
	}
}

// takeClaims takes every claim of the holder with its TTL: the
// leaderships first (a Campaign waits for the leader before it, up to its
// TTL when that one was killed; a leadership is kept alive meanwhile),
// then the others all at once, so that the first one's validity is not
// spent waiting for the others. It releases what it took and fails when a
// claim could not be taken, or when taking them left less than two thirds
// of the TTL on one of them (what a leadership may have left when the
// nodes die: see amnesiaHolderTTLs).
func (w *worker) takeClaims(ctx context.Context) ([]heldClaim, error) {
	held := make([]heldClaim, len(w.victimClaims))
	taken := make([]bool, len(w.victimClaims))
	for _, leads := range []bool{true, false} {
		var wg sync.WaitGroup
		for i, c := range w.victimClaims {
			if (c.workload == Election) == leads {
				wg.Go(func() { held[i], taken[i] = w.takeClaim(ctx, c, w.victimTTL) })
			}
		}
		wg.Wait()
	}
	var err error
	if len(held) == 0 {
		err = errors.New("no claim to take")
	}
	for i, h := range held {
		switch {
		case err != nil:
		case !taken[i]:
			err = fmt.Errorf("could not take its %s claim on %v", h.c.workload, h.c.keys)
		case time.Until(h.until()) < w.victimTTL*2/3:
			err = fmt.Errorf("its %s claim has only %v left", h.c.workload, time.Until(h.until()).Round(time.Millisecond))
		}
	}
	if err != nil {
		for i, h := range held {
			if taken[i] {
				w.releaseHeld(h)
			}
		}
		return nil, err
	}
	return held, nil
}

// validWorkloads returns the workloads whose every claim in held is still
// valid at now, in the order of Workloads.
func validWorkloads(held []heldClaim, now time.Time) []Workload {
	valid := make(map[Workload]bool)
	for _, h := range held {
		ok := h.valid(now)
		if v, seen := valid[h.c.workload]; !seen || v {
			valid[h.c.workload] = ok
		}
	}
	out := slices.DeleteFunc(slices.Sorted(maps.Keys(valid)), func(w Workload) bool { return !valid[w] })
	return out
}

// sharedClaims are the holder's claims on the workers' keys: victimClaims,
// but on clusters only those on the failover round's shard (the ordinary
// keys': the others' keys lie on other shards, which the round leaves
// alone).
func (c Config) sharedClaims() []claim {
	claims := c.victimClaims()
	if c.ClusterShards <= 0 {
		return claims
	}
	return slices.DeleteFunc(claims, func(cl claim) bool {
		return slices.ContainsFunc(cl.keys, func(k string) bool { return cluster.ShardOf(k, c.ClusterShards) != c.failoverShard() })
	})
}

// failoverShard is the shard of the clusters whose replica takes over in a
// failover round: the ordinary keys', which the holder's own keys share
// there (ownClaims).
func (c Config) failoverShard() int { return cluster.ShardOf(c.ordinaryKeys()[0], c.ClusterShards) }

// ownClaims are the holder's claims on keys nobody else uses, one for each
// of claims (victimClaims), alike but for the key: its prober tries them
// (probeClaims). On the restarted nodes (or the new masters of a failover)
// these keys are free, so only the quarantine can refuse the prober; on
// the shared keys the workers' own attempts leave their tokens and queue
// entries there, which refuse it too, whatever the quarantine says (a
// queued writer refuses readers). On clusters they carry the ordinary
// keys' hash tag, so that they lie on the failover round's shard.
func (c Config) ownClaims(claims []claim) []claim {
	prefix := "chaos:amnesia:"
	if c.ClusterShards > 0 {
		prefix = "{chaos}:amnesia:"
	}
	out := make([]claim, len(claims))
	for i, cl := range claims {
		cl.keys = slices.Clone(cl.keys)
		for j := range cl.keys {
			cl.keys[j] = fmt.Sprintf("%s%s:%d", prefix, cl.workload, j)
		}
		out[i] = cl
	}
	return out
}

// probeClaims are the acquisitions the prober tries against the holder's
// claims: one of each workload, the read/write one as a reader (a writer
// would only queue; readers are what the quarantine must refuse too).
func probeClaims(held []claim) []claim {
	var out []claim
	seen := make(map[Workload]bool)
	for _, c := range held {
		if seen[c.workload] {
			continue
		}
		seen[c.workload] = true
		if c.workload == RW {
			c.shared = true
		}
		out = append(out, c)
	}
	return out
}

// try makes one attempt at c with the run's TTL: TryLock and its kin, or
// for the election a Campaign with a short deadline (tryLead). One that got
// in is held a moment, recorded and released.
func (w *worker) try(c claim) error {
	if c.workload == Election {
		return w.tryLead(c.keys[0])
	}
	ctx, cancel := context.WithTimeout(context.Background(), lockWait)
	defer cancel()
	begin := time.Now()
	l, err := w.acquire(ctx, c, w.ttl, nil, true)
	if err == nil {
		start := time.Now()
		time.Sleep(sharedTime(w.rng))
		w.release(l, c, begin, start)
	}
	return err
}

// probeAll tries each claim (TryLock and its kin, with the run's TTL) until
// every node answered the attempt (decisive) or probeWindow is over: right
// after the restart the prober's connections to the restarted nodes are
// new, and the first attempts decide before those nodes answer.
func (w *worker) probeAll(claims []claim) []probe {
	out := make([]probe, 0, len(claims))
	end := time.Now().Add(probeWindow)
	for _, c := range claims {
		var err error
		for {
			err = w.try(c)
			if decisive(err) || !time.Now().Before(end) {
				break
			}
			time.Sleep(probePause)
		}
		out = append(out, probe{workload: c.workload, err: err})
	}
	return out
}

// Timing of the prober: it tries for up to probeWindow of the holder's
// linger, probePause apart.
const (
	probeWindow = victimLinger * 2 / 3
	probePause  = 50 * time.Millisecond
)

// decisive reports whether an attempt's outcome came from the nodes'
// answers: it got in, or enough nodes refused (the key taken, or the node
// not counted) that no majority was left; nodes still pending when that
// was clear do not matter, a node that failed or timed out instead would.
func decisive(err error) bool {
	var qe *redlock.QuorumError
	if err == nil {
		return true
	}
	if !errors.As(err, &qe) {
		return false
	}
	refused := 0
	for _, n := range qe.Nodes {
		switch nodeReason(n.Err) {
		case "taken", "quarantined", "clock":
			refused++
		}
	}
	return refused > qe.Total-qe.Needed
}

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

// The amnesia round: a majority of the nodes, none of which persists, is
// killed and started again at once while the holder (the victim role)
// keeps a claim of every workload; the nodes come back empty. In the safe
// run (majorityAmnesia) the clients' restart quarantine must keep those
// nodes out of every majority until each key they forgot has expired, so
// nobody may get in; in the unsafe run (restartEmpty, quarantine off) the
// other clients find the keys free, which the checker must flag. It is the
// only round in which a majority forgets a valid hold: without it, a kind
// of acquisition that ignored the quarantine would pass the safe run.

// amnesia is one request of the nemesis to the holder: the holder sends on
// ready nil once it holds every claim (else why not), then waits for
// restarted, probes, lingers, and reports on held.
type amnesia struct {
	ready     chan error // buffered
	restarted chan struct{}
	held      chan holderReport // buffered; sent once, after a nil ready
}

// holderReport is what the holder saw of a round: the workloads whose
// every claim was still valid after the linger, and its probes.
type holderReport struct {
	valid  []Workload
	probes []probe
}

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

func newAmnesia() amnesia {
	return amnesia{ready: make(chan error, 1), restarted: make(chan struct{}), held: make(chan holderReport, 1)}
}

// Timing of the amnesia rounds.
const (
	victimTTL    = 30 * time.Second // the unsafe victim's claims: outlasts the restart of a majority
	victimLinger = 1500 * time.Millisecond
	// holderTTLs is the safe holder's TTL in run TTLs (Config.holderTTL):
	// taking the claims, killing and starting three containers (0.9s on a
	// quiet machine, a few seconds on a loaded one) and the linger must
	// fit in it.
	holderTTLs = 3
	// amnesiaAttempts bounds the requests of one safe round to a holder
	// that could not take its claims.
	amnesiaAttempts = 3
)

// holderTTL is the TTL of the holder's claims: the unsafe victim's, or in
// the safe run holderTTLs run TTLs, which the clients' quarantine covers
// (Config.quarantine).
func (c Config) holderTTL() time.Duration {
	if c.Unsafe {
		return victimTTL
	}
	return holderTTLs * c.TTL
}

// playsMajorityAmnesia reports whether the safe schedule has majority
// amnesia rounds: on standalone nodes (the shard nemesis has none) without
// fencing (fence counters need AOF on every node, so no majority can come
// back empty).
func (c Config) playsMajorityAmnesia() bool {
	return !c.Unsafe && !c.Fencing && c.ClusterShards <= 0
}

// amnesiaLog counts the amnesia rounds of a run.
type amnesiaLog struct {
	mu sync.Mutex
	AmnesiaReport
	firstEnd time.Time // the first counted round's quarantine end
}

// record notes a played round: counted when every workload's claims stayed
// valid. quarantineEnd is when the clients count its nodes again.
func (a *amnesiaLog) record(counted bool, restart time.Duration, quarantineEnd time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.SlowestRestart = max(a.SlowestRestart, restart)
	if !counted {
		a.Uncounted++
		return
	}
	a.Rounds++
	if a.firstEnd.IsZero() {
		a.firstEnd = quarantineEnd
	}
}

func (a *amnesiaLog) skip() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.Skipped++
}

// report returns the counts, with the first quarantine's end as an offset
// from start and each workload's holds that began after it.
func (a *amnesiaLog) report(start time.Time, holds []Hold) AmnesiaReport {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.AmnesiaReport
	if a.firstEnd.IsZero() {
		return r
	}
	r.QuarantineEnd = a.firstEnd.Sub(start)
	r.HoldsAfter = make(map[Workload]int)
	for _, h := range holds {
		if h.Start.After(a.firstEnd) {
			r.HoldsAfter[h.Workload]++
		}
	}
	return r
}

// playMajority plays the safe run's amnesia round on nodes, asking the
// holder again (up to amnesiaAttempts times) when it could not take its
// claims. The error is a node that could not be brought back.
func (n *nemesis) playMajority(ctx context.Context, nodes []int) error {
	for attempt := range amnesiaAttempts {
		if attempt > 0 {
			sleep(ctx, time.Second)
		}
		played, err := n.amnesiaRound(ctx, nodes, majorityAmnesia)
		if played || err != nil || ctx.Err() != nil {
			return err
		}
	}
	n.amnesia.skip()
	n.logf("nemesis: majority-amnesia round SKIPPED: the holder could not take its claims in %d attempts", amnesiaAttempts)
	return nil
}

// runUnsafe plays amnesia rounds until ctx ends: a random majority of the
// nodes (none persists) restarts empty while the victim holds its claims,
// and the other clients, without the quarantine, find the keys free.
func (n *nemesis) runUnsafe(ctx context.Context) error {
	for ctx.Err() == nil {
		nodes := n.rng.Perm(n.c.Len())[:n.c.Len()/2+1]
		played, err := n.amnesiaRound(ctx, nodes, restartEmpty)
		if err != nil {
			return err
		}
		if played {
			sleep(ctx, time.Second)
		}
	}
	return nil
}

// amnesiaRound asks the holder to take its claims and, once it holds them
// all, kills nodes and starts them again at once (kind names the fault),
// marks them out for the clients' quarantine (settle), and waits for the
// holder's report, which decides whether the round counts. It reports
// whether the round was played (false: the holder did not take its claims,
// or the run ended first); the error is a node that could not be brought
// back.
func (n *nemesis) amnesiaRound(ctx context.Context, nodes []int, kind string) (bool, error) {
	req := newAmnesia()
	select {
	case n.victim <- req:
	case <-ctx.Done():
		return false, nil
	}
	asked := time.Now()
	if err := <-req.ready; err != nil {
		n.logf("nemesis: amnesia round not played: the holder %v", err)
		return false, nil
	}
	n.logf("nemesis: nodes %v: %s (the holder took its claims in %v)", nodes, kind, time.Since(asked).Round(time.Millisecond))
	killed := time.Now()
	err := n.restartEmpty(nodes, kind)
	back := time.Now()
	n.markOut(nodes, back)
	close(req.restarted)
	rep := <-req.held
	missing := slices.DeleteFunc(slices.Clone(n.workloads), func(w Workload) bool { return slices.Contains(rep.valid, w) })
	n.amnesia.record(len(missing) == 0, back.Sub(killed), back.Add(n.settle))
	took := back.Sub(killed).Round(time.Millisecond)
	if len(missing) == 0 {
		n.logf("nemesis: amnesia round: nodes %v back %v after the kill; every claim of %v still valid %v later; probes: %v",
			nodes, took, n.workloads, victimLinger, rep.probes)
	} else {
		n.logf("nemesis: amnesia round NOT COUNTED: nodes %v back %v after the kill; the claims of %v ran out first; probes: %v",
			nodes, took, missing, rep.probes)
	}
	return true, err
}

// restartEmpty kills nodes in parallel, counting each kill as kind, then
// starts them again in parallel (each up to three times). Tests replace it
// with restartHook.
func (n *nemesis) restartEmpty(nodes []int, kind string) error {
	if n.restartHook != nil {
		for range nodes {
			n.faults.add(kind)
		}
		return n.restartHook(nodes)
	}
	_ = n.each(nodes, func(nd *cluster.Node) error {
		if err := nd.Kill(context.Background()); err != nil {
			n.logf("nemesis: %v", err) // the node may still be up: start it anyway
			return nil
		}
		n.faults.add(kind)
		return nil
	})
	return n.each(nodes, func(nd *cluster.Node) error { return retry(func() error { return nd.Start(context.Background()) }) })
}

// markOut notes that the clients keep nodes out of their majorities for
// the quarantine (settle) from now on.
func (n *nemesis) markOut(nodes []int, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.outUntil == nil {
		n.outUntil = make(map[int]time.Time)
	}
	for _, i := range nodes {
		n.outUntil[i] = now.Add(n.settle)
	}
}

// majorityFaults is the safe amnesia round's faults, for awaitRoom: a
// majority of the nodes, drawn from those without persistence (none when
// there are too few).
func (n *nemesis) majorityFaults() []fault {
	var volatile []int
	for _, i := range n.rng.Perm(n.c.Len()) {
		if n.c.Node(i).Persistence() != cluster.AOFAlways {
			volatile = append(volatile, i)
		}
	}
	quorum := n.c.Len()/2 + 1
	if len(volatile) < quorum {
		return nil
	}
	out := make([]fault, quorum)
	for j, i := range volatile[:quorum] {
		out[j] = fault{kind: majorityAmnesia, node: i}
	}
	return out
}

// victimClaims are the holds the holder keeps through the restart of a
// majority, one workload after another, so that each workload meets the
// case: key 0 alone, keys 1 and 2 together (with three keys or more), the
// first read/write key as a writer, and every permit of the permit key.
// A new workload (the election, when it exists) adds its claim here and
// its call in take; TestVictimClaimsCoverEveryWorkload fails until it does.
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

// heldClaim is one of the holder's holds.
type heldClaim struct {
	c            claim
	l            *redlock.Lock
	begin, start time.Time
}

// serve plays the holder of one amnesia round: it takes every claim, reads
// the counter its first hold guards, tells the nemesis, holds through the
// restart of a majority, has its prober try each workload once, lingers
// while the other workers try, reports which claims are still valid, then
// writes (as a holder whose lock is still valid is entitled to, and only
// then) and releases them all.
func (w *worker) serve(ctx context.Context, req amnesia) {
	held, err := w.takeClaims(ctx)
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
		w.release(h.l, h.c, h.begin, h.start)
	}
}

// takeClaims takes every claim of the holder with its TTL, all at once, so
// that the first one's validity is not spent waiting for the others. It
// releases what it took and fails when a claim could not be taken, or when
// taking them left less than half the TTL on one of them.
func (w *worker) takeClaims(ctx context.Context) ([]heldClaim, error) {
	held := make([]heldClaim, len(w.victimClaims))
	taken := make([]bool, len(w.victimClaims))
	var wg sync.WaitGroup
	for i, c := range w.victimClaims {
		wg.Go(func() {
			l, begin, ok := w.take(ctx, c, w.victimTTL, nil)
			held[i], taken[i] = heldClaim{c: c, l: l, begin: begin, start: time.Now()}, ok
		})
	}
	wg.Wait()
	var err error
	if len(held) == 0 {
		err = errors.New("has no claim to take")
	}
	for i, h := range held {
		switch {
		case err != nil:
		case !taken[i]:
			err = fmt.Errorf("could not take its %s claim on %v", h.c.workload, h.c.keys)
		case time.Until(h.l.Until()) < w.victimTTL/2:
			err = fmt.Errorf("its %s claim has only %v left", h.c.workload, time.Until(h.l.Until()).Round(time.Millisecond))
		}
	}
	if err != nil {
		for i, h := range held {
			if taken[i] {
				w.release(h.l, h.c, h.begin, h.start)
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
		ok := h.l.Err() == nil && now.Before(h.l.Until())
		if v, seen := valid[h.c.workload]; !seen || v {
			valid[h.c.workload] = ok
		}
	}
	out := slices.DeleteFunc(slices.Sorted(maps.Keys(valid)), func(w Workload) bool { return !valid[w] })
	return out
}

// ownClaims are the holder's claims on keys nobody else uses, one for each
// of claims (victimClaims), alike but for the key: its prober tries them
// (probeClaims). On the restarted nodes these keys are free, so only the
// quarantine can refuse the prober; on the shared keys the workers' own
// attempts leave their tokens and queue entries there, which refuse it
// too, whatever the quarantine says (a queued writer refuses readers).
func ownClaims(claims []claim) []claim {
	out := make([]claim, len(claims))
	for i, c := range claims {
		c.keys = slices.Clone(c.keys)
		for j := range c.keys {
			c.keys[j] = fmt.Sprintf("chaos:amnesia:%s:%d", c.workload, j)
		}
		out[i] = c
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

// probeAll tries each claim (TryLock and its kin, with the run's TTL) until
// every node answered the attempt (decisive) or probeWindow is over: right
// after the restart the prober's connections to the restarted nodes are
// new, and the first attempts decide before those nodes answer. One that
// got in is held a moment, recorded and released.
func (w *worker) probeAll(claims []claim) []probe {
	out := make([]probe, 0, len(claims))
	end := time.Now().Add(probeWindow)
	for _, c := range claims {
		var err error
		for {
			ctx, cancel := context.WithTimeout(context.Background(), lockWait)
			begin := time.Now()
			var l *redlock.Lock
			l, err = w.acquire(ctx, c, w.ttl, nil, true)
			cancel()
			if err == nil {
				start := time.Now()
				time.Sleep(sharedTime(w.rng))
				w.release(l, c, begin, start)
			}
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

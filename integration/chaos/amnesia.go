package chaos

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redlockgo/redlock/integration/cluster"
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
// ready nil once it holds every claim (else why not, as "holder: ..."
// completes it), then waits for
// restarted, probes, lingers, and reports on held; then, once the round's
// quarantine is over, it takes its own claim of every workload again
// (claimsAfter).
type amnesia struct {
	ready     chan error // buffered
	restarted chan struct{}
	held      chan holderReport // buffered; sent once, after a nil ready
	// over is when the clients' quarantine of the round's nodes ends
	// (buffered; sent once the nodes are back): see claimsAfter.
	over chan time.Time
}

// holderReport is what the holder saw of a round: the workloads whose
// every claim was still valid after the linger, and its probes.
type holderReport struct {
	valid  []Workload
	probes []probe
}

func newAmnesia() amnesia {
	return amnesia{ready: make(chan error, 1), restarted: make(chan struct{}), held: make(chan holderReport, 1),
		over: make(chan time.Time, 1)}
}

// Timing of the amnesia rounds.
const (
	victimTTL    = 30 * time.Second // the unsafe victim's claims: outlasts the restart of a majority
	victimLinger = 1500 * time.Millisecond
	// amnesiaHolderTTLs is the safe holder's TTL in run TTLs in runs with
	// majority-amnesia rounds (Config.holderTTL). What follows its last
	// claim must fit in the validity left: killing and starting three
	// containers (2.6s on a quiet 2-core machine, 4.4s to 5.1s there
	// under the smoke run's clients), the prober's tries (up to
	// probeWindow and one more try) and the linger, about 8s; a
	// leadership, extended every third of its TTL, may have only two
	// thirds of it left when the nodes die. With 3 TTLs (9s) the
	// leadership ran out first in most rounds.
	amnesiaHolderTTLs = 5
	// failoverHolderTTLs is the same in runs on clusters, whose failover
	// rounds take under a second: their quarantine, which covers the
	// holder's TTL, keeps the failover shard's keys out of reach, and a
	// short cluster run must see them taken again after it.
	failoverHolderTTLs = 3
	// amnesiaAttempts bounds the requests of one safe round to a holder
	// that could not take its claims, but for the run's first round.
	amnesiaAttempts = 3
)

// holderTTL is the TTL of the holder's claims: the unsafe victim's, or in
// the safe run amnesiaHolderTTLs or failoverHolderTTLs run TTLs, which
// the clients' quarantine covers (Config.quarantine).
func (c Config) holderTTL() time.Duration {
	switch {
	case c.Unsafe:
		return victimTTL
	case c.playsMajorityAmnesia():
		return amnesiaHolderTTLs * c.TTL
	}
	return failoverHolderTTLs * c.TTL
}

// playsMajorityAmnesia reports whether the safe schedule has majority
// amnesia rounds: on standalone nodes (the shard nemesis has none) without
// fencing (fence counters need AOF on every node, so no majority can come
// back empty).
func (c Config) playsMajorityAmnesia() bool {
	return !c.Unsafe && !c.Fencing && c.ClusterShards <= 0
}

// playsFailover reports whether the shard nemesis plays failover rounds
// (shards.go): on clusters, in the safe run and in the unsafe one (whose
// only rounds they are, with the quarantine off).
func (c Config) playsFailover() bool { return c.ClusterShards > 0 }

// hasHolder reports whether the safe run has a holder of its own for its
// rounds (the unsafe run's is its victim).
func (c Config) hasHolder() bool { return !c.Unsafe && (c.playsMajorityAmnesia() || c.playsFailover()) }

// amnesiaLog counts the amnesia rounds of a run.
type amnesiaLog struct {
	mu sync.Mutex
	AmnesiaReport
	firstEnd time.Time   // the first counted round's quarantine end
	kills    []time.Time // when each played round killed its nodes
}

// record notes a played round, whose nodes were killed at killed and back
// at back: counted when every workload's claims stayed valid.
// quarantineEnd is when the clients count its nodes again.
func (a *amnesiaLog) record(counted bool, killed, back, quarantineEnd time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.kills = append(a.kills, killed)
	a.SlowestRestart = max(a.SlowestRestart, back.Sub(killed))
	if !counted {
		a.Uncounted++
		return
	}
	a.Rounds++
	if a.firstEnd.IsZero() {
		a.firstEnd = quarantineEnd
	}
}

// killTimes returns when each played round killed its majority: from then
// on the fence counters (the election's terms) on it are gone.
func (a *amnesiaLog) killTimes() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.kills)
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
// holder again, a second apart, when it could not take its claims: up to
// attempts times, or until the run ends when attempts is 0 (the run's
// first round, which every run must have). The error is a node that could
// not be brought back.
func (n *nemesis) playMajority(ctx context.Context, nodes []int, attempts int) error {
	for attempt := 0; attempts == 0 || attempt < attempts; attempt++ {
		if attempt > 0 {
			sleep(ctx, time.Second)
		}
		played, err := n.amnesiaRound(ctx, nodes, majorityAmnesia)
		if played {
			n.quietAfter(nodes)
		}
		if played || err != nil || ctx.Err() != nil {
			return err
		}
	}
	n.amnesia.skip()
	n.logf("nemesis: majority-amnesia round SKIPPED: the holder could not take its claims in %d attempts", attempts)
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
// and marks them out for the clients' quarantine (settle): see
// holderRound, whose results it returns.
func (n *nemesis) amnesiaRound(ctx context.Context, nodes []int, kind string) (bool, error) {
	h := holderRound{victim: n.victim, workloads: n.workloads, settle: n.settle, log: n.amnesia, logf: n.logf,
		what: fmt.Sprintf("nodes %v: %s", nodes, kind)}
	return h.play(ctx, func() error {
		err := n.restartEmpty(nodes, kind)
		n.markOut(nodes, time.Now())
		return err
	})
}

// holderRound is one round that the holder keeps its claims through: an
// amnesia round (the nodes of a majority restarted empty) or a failover
// round (shards.go).
type holderRound struct {
	victim    chan<- amnesia
	workloads []Workload // those whose claims must stay valid for the round to count
	settle    time.Duration
	log       *amnesiaLog
	logf      func(format string, args ...any)
	what      string // the faults, for the log
}

// play asks the holder to take its claims and, once it holds them all,
// runs inject (the faults: it returns once the nodes are back), then waits
// for the holder's report, which decides whether the round counts. It
// reports whether the round was played (false: the holder did not take
// its claims, or the run ended first); the error is inject's (a node that
// could not be brought back).
func (h holderRound) play(ctx context.Context, inject func() error) (bool, error) {
	req := newAmnesia()
	select {
	case h.victim <- req:
	case <-ctx.Done():
		return false, nil
	}
	asked := time.Now()
	if err := <-req.ready; err != nil {
		h.logf("nemesis: round not played (%s): holder: %v", h.what, err)
		return false, nil
	}
	h.logf("nemesis: %s (the holder took its claims in %v)", h.what, time.Since(asked).Round(time.Millisecond))
	killed := time.Now()
	err := inject()
	back := time.Now()
	req.over <- back.Add(h.settle)
	close(req.restarted)
	rep := <-req.held
	missing := slices.DeleteFunc(slices.Clone(h.workloads), func(w Workload) bool { return slices.Contains(rep.valid, w) })
	h.log.record(len(missing) == 0, killed, back, back.Add(h.settle))
	took := back.Sub(killed).Round(time.Millisecond)
	if len(missing) == 0 {
		h.logf("nemesis: round %s: back %v after the fault; every claim of %v still valid %v later; probes: %v",
			h.what, took, h.workloads, victimLinger, rep.probes)
	} else {
		h.logf("nemesis: round NOT COUNTED (%s): back %v after the fault; the claims of %v ran out first; probes: %v",
			h.what, took, missing, rep.probes)
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

// quietAfter keeps the next round from starting before recoverWindow has
// passed since the end of the quarantine of nodes (awaitRoom). The recovery
// check (Result.Unexercised) asks whether every workload took a lock in
// that window after a majority's quarantine; with the next round played at
// once (two nodes down, on a machine with two CPU hogs and other tests
// running, load average 18), the three live nodes answered too late for a
// majority, and the check judged those faults, not the recovery.
func (n *nemesis) quietAfter(nodes []int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, i := range nodes {
		if t := n.outUntil[i].Add(recoverWindow); t.After(n.quietUntil) {
			n.quietUntil = t
		}
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

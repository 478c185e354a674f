package node

import (
	"context"
	"sync"
	"time"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/internal/scripts"
	"github.com/redlockgo/redlock/pool"
)

// A restarted node's return (issue 34; docs/safety.md, "A restarted node's
// return"). A standalone node that restarted without its data may have
// forgotten leases it granted; the restart quarantine keeps it out of
// every majority for the quarantine (a day by default). What it must cover
// is narrower: the leases the node granted before it restarted, which are
// all gone once the longest of them has expired. Each node keeps a lease
// ceiling (scripts' ceiling.lua): at least the TTL of every lease it
// granted that may still be valid, alive at least as long as each, raised
// by every script that grants or extends a lease.
//
// The rule: a restarted node r counts once its uptime exceeds, by the
// drift allowance and horizonMargin, the largest ceiling read from a quorum
// of the other nodes, each of which counts itself when read (it persists
// every write, or is older than the quarantine, or is declared fresh for
// its current run), the read made once r's uptime is past Config.Settle
// and its drift allowance (r's uptime runs on r's clock).
// Why it is safe: a lease L that counts a grant r made before it
// restarted was decided by votes that answered within its attempt's node
// timeout of its start, which was before r's grant: so by Settle after the
// restart every vote L counted has landed (a waiter's grants are no
// exception: Won confirms them with an extension, redlock/queue.go). L
// may be any Client's, so Settle is the longest node timeout any Client
// accepts (redlock.NodeTimeoutLimit), not the reader's own: a ceiling read
// sooner may come before a slower Client's grant lands on the peer. L was
// granted by a majority M; a node of M other than r that counts at the
// read either kept its data since it granted L, so its ceiling is at least
// L's TTL and alive while L may be valid, or restarted since and was
// declared fresh, which it is only once every lease it granted before, L
// included, had expired. A quorum of the other nodes meets M less r (|M| >=
// quorum), so the largest ceiling read is at least L's TTL, and r returns
// only after L expired (its validity ends before its start plus its TTL).
//
// The Client that establishes a node's horizon writes the fresh-start
// declaration for that run on it (scripts.Admit): every Client, one that
// connects later or reaches only a minority of the other nodes included,
// then counts the node without asking again.

// horizonMargin is added to a node's horizon, beyond the drift allowance:
// the time a ceiling read, a declaration and a clock's tick take.
const horizonMargin = 250 * time.Millisecond

// probeEvery is how often, at most, a node's horizon is probed: a probe
// that found no quorum of peers to vouch for the node is tried again at the
// next vote that finds it quarantined, no sooner.
const probeEvery = time.Second

// horizons is what a Set knows of its restarted nodes' return.
type horizons struct {
	mu       sync.Mutex
	stop     <-chan struct{} // nil until Start: no probe before
	stopped  bool            // set by Stop: no probe after
	running  sync.WaitGroup
	probing  []bool      // a probe of node i is running
	last     []time.Time // when node i's last probe began
	admitted []string    // the run of node i whose horizon passed
}

// init sizes h for n nodes.
func (h *horizons) init(n int) {
	h.probing, h.last, h.admitted = make([]bool, n), make([]time.Time, n), make([]string, n)
}

// isAdmitted reports whether node i's run run counts again: its horizon
// passed, as this Set established or read on the node.
func (s *Set) isAdmitted(i int, run string) bool {
	s.horizon.mu.Lock()
	defer s.horizon.mu.Unlock()
	return run != "" && s.horizon.admitted[i] == run
}

// admit records that node i's run counts again, and reports it once,
// when it ends the quarantine early (a quarantine that ended meanwhile
// needs no report: the node counts by its age).
func (s *Set) admit(i int, id pool.Identity) {
	s.horizon.mu.Lock()
	fresh := s.horizon.admitted[i] != id.RunID
	s.horizon.admitted[i] = id.RunID
	s.horizon.mu.Unlock()
	if fresh && QuarantineLeft(id, s.hold(), s.cfg.Clock.Now()) > 0 {
		s.cfg.Report(context.Background(), i, Returned, &ReturnedError{RunID: id.RunID, After: s.cfg.Clock.Now().Sub(id.Started)})
	}
}

// probe starts, in the background, the horizon probe of node r, whose run
// id was found quarantined: at most one per node at a time, one a
// probeEvery, none before Start or after the Set's stop.
func (s *Set) probe(r int, id pool.Identity) {
	h := &s.horizon
	now := s.cfg.Clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stop == nil || h.stopped || h.probing[r] || (!h.last[r].IsZero() && now.Sub(h.last[r]) < probeEvery) {
		return
	}
	select {
	case <-h.stop:
		return
	default:
	}
	h.probing[r], h.last[r] = true, now
	h.running.Add(1)
	go func() {
		defer h.running.Done()
		defer func() {
			h.mu.Lock()
			h.probing[r] = false
			h.mu.Unlock()
		}()
		s.returnAt(r, id)
	}()
}

// returnAt establishes node r's horizon and, once it has passed, declares
// r's run fresh and admits it. It gives up, until the next probe, when r
// restarted again, a quorum of its peers cannot vouch for it, or the Set
// stops.
func (s *Set) returnAt(r int, id pool.Identity) {
	rep, err := s.readHorizon(r)
	if err != nil || rep.run != id.RunID {
		return // unreachable, or restarted again: the next vote probes anew
	}
	if rep.declared == id.RunID {
		s.admit(r, id) // another Client established it
		return
	}
	if !s.sleepUntil(id.Started.Add(s.cfg.Settle + driftOf(s.cfg.DriftFactor, s.cfg.Settle))) {
		return // every vote a lease counting r's old grants counted has landed by then
	}
	ceiling, vouched := s.peersCeiling(r)
	if vouched < s.quorum {
		return // a majority's amnesia, or peers out of reach: the full quarantine
	}
	at := id.Started.Add(ceiling + driftOf(s.cfg.DriftFactor, ceiling) + horizonMargin)
	if !s.sleepUntil(at) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	v, err := s.pools[r].Eval(ctx, scripts.Admit, []string{keyspace.FreshStart}, id.RunID)
	if err == nil && v == int64(1) {
		s.admit(r, id)
	}
}

// driftOf is the drift allowance of a span d under factor.
func driftOf(factor float64, d time.Duration) time.Duration {
	return time.Duration(float64(d)*factor) + DriftConstant
}

// sleepUntil waits until at on the Set's clock, and reports false when the
// Set stops first.
func (s *Set) sleepUntil(at time.Time) bool {
	d := at.Sub(s.cfg.Clock.Now())
	if d <= 0 {
		return true
	}
	t := s.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-s.horizon.stop:
		return false
	}
}

// horizonReply is what a node told of itself (scripts.Horizon).
type horizonReply struct {
	run      string
	ceiling  time.Duration
	declared string
}

// readHorizon reads node i's run, ceiling and declaration, bounded by the
// node timeout.
func (s *Set) readHorizon(i int) (horizonReply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	v, err := s.pools[i].Eval(ctx, scripts.Horizon, []string{keyspace.Ceiling, keyspace.FreshStart})
	if err != nil {
		return horizonReply{}, err
	}
	a, _ := v.([]any)
	if len(a) != 3 {
		return horizonReply{}, errMalformedHorizon
	}
	run, _ := a[0].(string)
	ms, _ := a[1].(int64)
	declared, _ := a[2].(string)
	return horizonReply{run: run, ceiling: time.Duration(ms) * time.Millisecond, declared: declared}, nil
}

// peersCeiling reads the lease ceiling of every node but r, in parallel,
// and returns the largest among those that vouch for themselves (vouches),
// and how many did.
func (s *Set) peersCeiling(r int) (time.Duration, int) {
	var mu sync.Mutex
	var top time.Duration
	vouched := 0
	var wg sync.WaitGroup
	for j := range s.pools {
		if j == r {
			continue
		}
		wg.Go(func() {
			rep, err := s.readHorizon(j)
			if err != nil || !s.vouches(j, rep) {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			top = max(top, rep.ceiling)
			vouched++
		})
	}
	wg.Wait()
	return top, vouched
}

// vouches reports whether node j, which answered rep, counts itself now,
// so that its ceiling covers every lease it granted that may still be
// valid: a standalone node whose identity its Pool knows, read on the run
// that answered, that persists every write, is older than the quarantine,
// is declared fresh for that run, or was admitted by its own horizon.
func (s *Set) vouches(j int, rep horizonReply) bool {
	q := s.quarantineOf(j)
	if q == nil || rep.run == "" {
		return false
	}
	id, known := q.id.Identity()
	if !known || id.RunID != rep.run || id.Started.IsZero() {
		return false
	}
	return rep.declared == rep.run || s.isAdmitted(j, rep.run) ||
		QuarantineLeft(id, s.hold(), s.cfg.Clock.Now()) == 0
}

// quarantineOf returns node i's restart quarantine check, nil when it has
// none (the quarantine is off, its Pool tells no identity, a cluster).
func (s *Set) quarantineOf(i int) *quarantine {
	for _, c := range s.checks[i] {
		if q, ok := c.(*quarantine); ok {
			return q
		}
	}
	return nil
}

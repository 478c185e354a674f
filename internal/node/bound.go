package node

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/internal/scripts"
	"github.com/redlockgo/redlock/pool"
)

// The max TTL recorded on the nodes (issue 59). The restart quarantine of
// a Client covers the leases its own bound allows (Config.MaxTTL); a lease
// of another Client with a larger bound could outlive it. So every script
// that grants or extends a lease records its Client's bound on the node
// (keyspace.MaxTTL, no TTL, the largest winning: scripts' ceiling.lua),
// and a Set quarantines for the largest bound it read when it is larger
// than its own (hold).
//
// When it reads: a standalone node whose run is younger than the longest
// bound any Client may record (Config.BoundCap, with its drift) and that
// has served out this Set's own quarantine counts only once a read of
// every node's record, begun after the Set first saw that run, was
// answered by a quorum. The read runs in the background (readBound) and
// the votes before it do not count the node. A lease a restarted node may
// have forgotten was granted before its restart by a majority, every node
// of which recorded its Client's bound in the same script; a quorum read
// after the restart meets that majority, and finds the record on any node
// of it that kept its data. A record is lost only with the data: after a
// majority of the nodes lost theirs, a Client that never read it cannot
// know a larger bound (docs/safety.md).

// bounds is what a Set read of the recorded max TTL.
type bounds struct {
	top     atomic.Int64 // the largest record read, in ns
	mu      sync.Mutex
	reading bool
	last    time.Time // when the last read began
	readFor []string  // readFor[i]: node i's run when a quorum read began
}

// init sizes b for n nodes.
func (b *bounds) init(n int) { b.readFor = make([]string, n) }

// Recorded returns the largest max TTL read on the nodes, 0 before any.
func (s *Set) Recorded() time.Duration { return time.Duration(s.bound.top.Load()) }

// hold is the quarantine the Set applies now: Config.Quarantine, or the
// recorded bound with its drift allowance when that is larger than the
// Client's own bound (and the quarantine is on).
func (s *Set) hold() time.Duration {
	q := s.cfg.Quarantine
	if top := s.Recorded(); q > 0 && top > s.cfg.MaxTTL {
		q = max(q, top+driftOf(s.cfg.DriftFactor, top))
	}
	return q
}

// boundRead reports whether node i's run id may count as far as the
// recorded bound is concerned: the run is older than any bound a Client
// may record, or a quorum read of the records began after the Set knew
// the run.
func (s *Set) boundRead(i int, id pool.Identity, now time.Time) bool {
	capHold := s.cfg.BoundCap + driftOf(s.cfg.DriftFactor, s.cfg.BoundCap)
	if s.cfg.BoundCap <= 0 || QuarantineLeft(id, capHold, now) == 0 {
		return true
	}
	s.bound.mu.Lock()
	defer s.bound.mu.Unlock()
	return s.bound.readFor[i] == id.RunID
}

// readBound starts, in the background, a read of every standalone node's
// record: at most one at a time, one a probeEvery, none before Start or
// after the Set's stop. Its owner is the Set (Stop waits for it).
func (s *Set) readBound() {
	now := s.cfg.Clock.Now()
	s.bound.mu.Lock()
	if s.bound.reading || (!s.bound.last.IsZero() && now.Sub(s.bound.last) < probeEvery) {
		s.bound.mu.Unlock()
		return
	}
	s.bound.reading, s.bound.last = true, now
	s.bound.mu.Unlock()
	h := &s.horizon
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stop == nil || h.stopped {
		s.bound.mu.Lock()
		s.bound.reading = false
		s.bound.mu.Unlock()
		return
	}
	h.running.Add(1)
	go func() {
		defer h.running.Done()
		runs := s.runs() // known before the read: it covers them
		top, answered := s.readRecords()
		s.bound.mu.Lock()
		defer s.bound.mu.Unlock()
		s.bound.reading = false
		for old := s.bound.top.Load(); int64(top) > old && !s.bound.top.CompareAndSwap(old, int64(top)); {
			old = s.bound.top.Load()
		}
		if answered >= s.quorum {
			copy(s.bound.readFor, runs)
		}
	}()
}

// runs returns each node's run as its quarantine check knows it ("" for
// none).
func (s *Set) runs() []string {
	out := make([]string, len(s.pools))
	for i := range out {
		if q := s.quarantineOf(i); q != nil {
			if id, ok := q.id.Identity(); ok {
				out[i] = id.RunID
			}
		}
	}
	return out
}

// readRecords reads every standalone node's record in parallel, each
// bounded by the node timeout, and returns the largest and how many
// answered.
func (s *Set) readRecords() (time.Duration, int) {
	var mu sync.Mutex
	var top time.Duration
	answered := 0
	var wg sync.WaitGroup
	for i := range s.pools {
		if s.names[i] != Names(Standalone{}) {
			continue
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
			defer cancel()
			v, err := s.pools[i].Eval(ctx, scripts.Bound, []string{keyspace.MaxTTL})
			ms, ok := v.(int64)
			if err != nil || !ok {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			top = max(top, time.Duration(ms)*time.Millisecond)
			answered++
		})
	}
	wg.Wait()
	return top, answered
}

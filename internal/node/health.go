package node

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redlockgo/redlock/pool"
)

// Report is what a node's health check tells the Client's observers.
type Report int

const (
	// Quarantined: a run of the node was found quarantined (ErrQuarantined).
	Quarantined Report = iota
	// Unverified: the node's uptime cannot be read (ErrUnverified).
	Unverified
	// ClockFault: the node's clock ran fast or jumped (ErrClock).
	ClockFault
	// Returned: a run of the node that was quarantined counts again before
	// the quarantine's end, its horizon passed (horizon.go); the error is
	// a *ReturnedError.
	Returned
	// SameServer: a run of the node is another node's too, under another
	// address (sameserver.go); the error is a *SameServerError.
	SameServer
)

// Reporter hands a report about node i to the Client's observers. It must
// not block on I/O.
type Reporter func(ctx context.Context, i int, r Report, err error)

// check is one health check of a node, chosen when the Set is built. It
// returns why node i must not count now for key (the decision's lock
// key), or nil.
type check interface {
	check(ctx context.Context, i int, key string) error
}

// quarantine is the restart quarantine of one node whose Pool tells its
// identity (pool.Identifier).
type quarantine struct {
	id   pool.Identifier
	set  *Set
	last lastReport
}

// note is one report about a server run (a shard check's: a reign).
type note struct {
	kind  Report
	runID string
	seen  bool
}

// lastReport is what a check last reported about its node, so that each
// state of a run is reported once.
type lastReport struct {
	mu   sync.Mutex
	last note
}

// report reports kind for the node's run runID through s's Reporter,
// unless it is what was last reported.
func (r *lastReport) report(ctx context.Context, s *Set, i int, kind Report, runID string, err error) {
	n := note{kind: kind, runID: runID, seen: true}
	r.mu.Lock()
	seen := r.last == n
	r.last = n
	r.mu.Unlock()
	if !seen {
		s.cfg.Report(ctx, i, kind, err)
	}
}

// check returns an error wrapping ErrQuarantined when the node may have
// lost its data less than the quarantine ago, and nil when it counts. It
// reports the first time a server run is found quarantined or
// unverifiable.
func (q *quarantine) check(ctx context.Context, i int, _ string) error {
	id, ok := q.id.Identity()
	switch {
	case !ok:
		return nil // a Pool that answered without connecting: nothing to learn
	case id.Started.IsZero():
		q.last.report(ctx, q.set, i, Unverified, id.RunID, fmt.Errorf("%w: uptime unknown: %w", ErrUnverified, id.Err))
		return nil
	}
	now := q.set.cfg.Clock.Now()
	if q.set.isAdmitted(i, id.RunID) {
		return nil
	}
	left := QuarantineLeft(id, q.set.hold(), now)
	if left == 0 {
		if q.set.boundRead(i, id, now) {
			return nil
		}
		q.set.readBound() // a longer bound recorded on the nodes would keep it out (bound.go)
		return fmt.Errorf("%w: run %s started %v ago, persistence %s; counts once the longest TTL recorded on the nodes is read",
			ErrQuarantined, id.RunID, now.Sub(id.Started).Truncate(time.Second), id.Persistence)
	}
	q.set.probe(i, id) // its horizon may end the quarantine sooner (horizon.go)
	q.set.readBound()  // a longer bound recorded on the nodes makes it longer (bound.go)
	err := fmt.Errorf("%w: run %s started %v ago, persistence %s; counts in %v",
		ErrQuarantined, id.RunID, now.Sub(id.Started).Truncate(time.Second), id.Persistence, left.Truncate(time.Second))
	q.last.report(ctx, q.set, i, Quarantined, id.RunID, err)
	return err
}

// QuarantineLeft is the restart quarantine's rule: how much longer a server
// of identity id stays out of the majority at now under a quarantine of
// hold, 0 when it counts. It counts when its uptime is unknown (the caller
// reports that), when it persists every write, when it carries the
// fresh-start declaration for its current run, and once it is hold old;
// always when hold is 0 (the quarantine is off).
func QuarantineLeft(id pool.Identity, hold time.Duration, now time.Time) time.Duration {
	if hold <= 0 || id.Started.IsZero() || id.Persistence == pool.PersistenceAlways || id.FreshStart {
		return 0
	}
	return max(hold-now.Sub(id.Started), 0)
}

// Quarantined returns how much longer node i stays out under the restart
// quarantine at the most, judged on the identity its Pool learned last
// (its horizon may end it sooner: horizon.go), and 0 when it counts, when
// the quarantine is off or does not apply to the node (a Pool that tells
// no identity; a Redis Cluster node, judged per key). It does no I/O and
// reports nothing.
func (s *Set) Quarantined(i int) time.Duration {
	q := s.quarantineOf(i)
	if q == nil {
		return 0
	}
	id, known := q.id.Identity()
	if !known || s.isAdmitted(i, id.RunID) {
		return 0
	}
	return QuarantineLeft(id, s.hold(), s.cfg.Clock.Now())
}

// Health returns why node i must not count now for key, the lock key of
// the decision its answer is part of (another node is the same server, a
// quarantine, a clock fault, a shard's failover), or nil when it counts.
// It runs the node's checks, chosen when the Set was built: none when the
// checks do not apply to the node; the same-server check (sameserver.go)
// and, when it is on, the restart quarantine on a node whose Pool tells its
// identity; the shard check on a Redis Cluster node under the quarantine.
// Only the shard check does I/O (HealthReads): one script on the master of
// key's slot, bounded by ctx, and only once the checks without I/O let the
// node count. key is unused on the other nodes.
//
// What it returns sets the trust part of the node's State.
func (s *Set) Health(ctx context.Context, i int, key string) error {
	for _, c := range s.checks[i] {
		if err := c.check(ctx, i, key); err != nil {
			s.noteTrust(i, err)
			return err
		}
	}
	s.noteTrust(i, nil)
	return nil
}

// HealthReads reports whether node i's Health does I/O (the shard check of
// a Redis Cluster node under the quarantine), decided when the Set was
// built: a caller that must not block judges such a node elsewhere.
func (s *Set) HealthReads(i int) bool { return s.reads[i] }

// HealthReadsAny reports whether some node's Health does I/O, and so reads
// the key it is given (HealthReads).
func (s *Set) HealthReadsAny() bool { return slices.Contains(s.reads, true) }

// Unverified reports whether the restart quarantine is on but cannot age
// node i now: the identity its Pool learned last has no uptime (INFO
// hidden). It does no I/O.
func (s *Set) Unverified(i int) bool {
	for _, c := range s.checks[i] {
		if q, ok := c.(*quarantine); ok {
			id, known := q.id.Identity()
			return known && id.Started.IsZero()
		}
	}
	return false
}

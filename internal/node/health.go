package node

import (
	"context"
	"fmt"
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
)

// Reporter hands a report about node i to the Client's observers. It must
// not block on I/O.
type Reporter func(ctx context.Context, i int, r Report, err error)

// check is one health check of a node, chosen when the Set is built. It
// returns why node i must not count now, or nil.
type check interface {
	check(ctx context.Context, i int) error
}

// quarantine is the restart quarantine of one node whose Pool tells its
// identity (pool.Identifier).
type quarantine struct {
	id   pool.Identifier
	set  *Set
	mu   sync.Mutex
	last note // what was last reported, so that each state of a run is reported once
}

// note is one report about a server run.
type note struct {
	kind  Report
	runID string
	seen  bool
}

// check returns an error wrapping ErrQuarantined when the node may have
// lost its data less than the quarantine ago, and nil when it counts. It
// reports the first time a server run is found quarantined or
// unverifiable.
func (q *quarantine) check(ctx context.Context, i int) error {
	id, ok := q.id.Identity()
	switch {
	case !ok:
		return nil // a Pool that answered without connecting: nothing to learn
	case id.Started.IsZero():
		q.report(ctx, i, Unverified, id.RunID, fmt.Errorf("%w: uptime unknown: %w", ErrUnverified, id.Err))
		return nil
	case id.Persistence == pool.PersistenceAlways || id.FreshStart:
		return nil
	}
	hold := q.set.cfg.Quarantine
	age := q.set.cfg.Clock.Now().Sub(id.Started)
	if age >= hold {
		return nil
	}
	err := fmt.Errorf("%w: run %s started %v ago, persistence %s; counts in %v",
		ErrQuarantined, id.RunID, age.Truncate(time.Second), id.Persistence, (hold - age).Truncate(time.Second))
	q.report(ctx, i, Quarantined, id.RunID, err)
	return err
}

// report reports kind for the node's run runID, unless already reported.
func (q *quarantine) report(ctx context.Context, i int, kind Report, runID string, err error) {
	n := note{kind: kind, runID: runID, seen: true}
	q.mu.Lock()
	seen := q.last == n
	q.last = n
	q.mu.Unlock()
	if !seen {
		q.set.cfg.Report(ctx, i, kind, err)
	}
}

// Health returns why node i must not count now (a quarantine, a clock
// fault), or nil when it counts. It runs the node's checks, chosen when the
// Set was built (none, when both checks are off or do not apply to the
// node). It does no I/O.
func (s *Set) Health(ctx context.Context, i int) error {
	for _, c := range s.checks[i] {
		if err := c.check(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

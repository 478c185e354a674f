package bench

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/redlock"
)

// The lock family's entrants: one attempt and Unlock each, uncontended.
const (
	familyTryLock    = "TryLock (1 key)"
	familyTryLockAll = "TryLockAll (4 keys)"
	familyTryRLock   = "TryRLock (1 key)"
)

// familyKeys is how many keys the TryLockAll entrant takes at once.
const familyKeys = 4

// familyCalls lists the family table's rows; TryLock is the base of its
// ratios.
var familyCalls = []string{familyTryLock, familyTryLockAll, familyTryRLock}

// FamilyResult is the lock family scenario: TryLock, TryLockAll and
// TryRLock on one Client each, interleaved, with every key free.
type FamilyResult struct {
	Route  route
	Series map[string]*series
}

// tryLocker takes key with one attempt of call (a familyTry* name) and
// releases it with Unlock.
type tryLocker struct {
	c    *redlock.Client
	call string
}

func (t tryLocker) Lock(ctx context.Context, key string) (any, error) {
	var l *redlock.Lock
	var err error
	switch t.call {
	case familyTryLockAll:
		keys := make([]string, familyKeys)
		for i := range keys {
			keys[i] = fmt.Sprintf("%s:%d", key, i)
		}
		l, err = t.c.TryLockAll(ctx, keys, TTL)
	case familyTryRLock:
		l, err = t.c.TryRLock(ctx, key, TTL)
	default:
		l, err = t.c.TryLock(ctx, key, TTL)
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (t tryLocker) Unlock(ctx context.Context, held any) error {
	return held.(*redlock.Lock).Unlock(ctx)
}

// familyEntrants returns one entrant per family call on f's route, each
// with a Client of its own.
func familyEntrants(tb testing.TB, f *fleet) []entrant {
	tb.Helper()
	var es []entrant
	for _, call := range familyCalls {
		ps, err := f.pools()
		if err != nil {
			tb.Fatalf("bench: %v", err)
		}
		c, err := redlock.New(ps)
		if err != nil {
			tb.Fatalf("bench: redlock.New: %v", err)
		}
		f.onClose(c.Close)
		es = append(es, one(call, tryLocker{c: c, call: call}))
	}
	return es
}

// runFamily measures the family's calls as runLatency does the
// implementations: uncontended, interleaved, straight to Redis so that the
// allocations counted are the client's.
func runFamily(tb testing.TB, c *cluster.Cluster, cfg Config) *FamilyResult {
	tb.Helper()
	healthy(tb, c)
	defer healthy(tb, c)
	f := newFleet(c, direct)
	defer closeFleet(tb, f)
	es := familyEntrants(tb, f)
	ctx, cancel := context.WithTimeout(context.Background(),
		time.Duration(cfg.Rounds)*cfg.Slice*time.Duration(len(es))+2*time.Minute)
	defer cancel()
	latency(ctx, "bench:family", es, plan{rounds: 1, slice: 20 * time.Millisecond}) // warm up
	return &FamilyResult{Route: direct,
		Series: latency(ctx, "bench:family", es, plan{rounds: cfg.Rounds, slice: cfg.Slice, allocs: true})}
}

// familyTable writes the family scenario, with ratios to TryLock.
func (r *Results) familyTable(w io.Writer) {
	if r.Family == nil {
		return
	}
	fmt.Fprintf(w, "#### The lock family, uncontended: one attempt + Unlock at a time (%d calls interleaved, %s)\n\n",
		len(familyCalls), r.Family.Route)
	fmt.Fprintf(w, "| call | p50 | p99 | max | allocs/op | bytes/op | operations (errors) | p50 / %s | p99 / %s |\n",
		familyTryLock, familyTryLock)
	fmt.Fprintf(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	base := r.Family.Series[familyTryLock]
	var notes []string
	for _, call := range familyCalls {
		s := r.Family.Series[call]
		if s == nil {
			continue
		}
		a, b := s.allocsPerOp()
		tableRow(w, call, fmtDur(s.lat.quantile(.5)), fmtDur(s.lat.quantile(.99)), fmtDur(s.lat.max()),
			perOp(a), perOp(b), opsErrs(s),
			fmtRatio(familyRatio(s, base, .5)), fmtRatio(familyRatio(s, base, .99)))
		if s.firstErr != nil {
			notes = append(notes, fmt.Sprintf("%s's first error: %v", call, oneLine(s.firstErr)))
		}
	}
	fmt.Fprintf(w, "\nEach entrant has a Client of its own and keys of its own, always free; %s takes its %d keys "+
		"with one script per node. Clients connect straight to Redis, as in the no-proxy row above.\n",
		familyTryLockAll, familyKeys)
	writeNotes(w, notes)
	fmt.Fprintln(w)
}

// perOp prints an allocation figure, or "n/a" when it was not measured.
func perOp(v float64) string {
	if v < 0 {
		return "n/a"
	}
	return fmtFloat(v)
}

// familyRatio is s's quantile q over base's; NaN without base.
func familyRatio(s, base *series, q float64) float64 {
	if base == nil {
		return ratio(-1, 1)
	}
	return ratio(float64(s.lat.quantile(q)), float64(base.lat.quantile(q)))
}

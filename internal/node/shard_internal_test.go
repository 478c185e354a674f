package node

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/internal/shardwatch"
	"github.com/redlockgo/redlock/pool"
)

// reignPool is a Pool that answers the reign script with a canned reign.
type reignPool struct {
	cluster bool
	mu      sync.Mutex
	reply   []any
	err     error
	reads   int
	keys    []string
	// persists is the persistence of run1 that ShardIdentity tells; unset:
	// it fails. identities counts its calls.
	persists   pool.Persistence
	identities int
}

// ShardIdentity implements pool.ShardIdentifier for run1.
func (p *reignPool) ShardIdentity(_ context.Context, _, runID string) (pool.Identity, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.identities++
	if runID != "run1" || p.persists == pool.PersistenceUnknown {
		return pool.Identity{}, errors.New("reignPool: no identity")
	}
	return pool.Identity{RunID: runID, Persistence: p.persists}, nil
}

func (p *reignPool) Addr() string    { return "fake:7000" }
func (p *reignPool) IsCluster() bool { return p.cluster }
func (p *reignPool) Close() error    { return nil }
func (p *reignPool) SetNX(context.Context, string, string, time.Duration) (bool, error) {
	return false, errors.New("reignPool: no SetNX")
}
func (p *reignPool) Eval(_ context.Context, s *pool.Script, keys []string, _ ...any) (any, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s != shardwatch.Script {
		return nil, errors.New("reignPool: not the reign script")
	}
	p.reads++
	p.keys = append(p.keys, keys...)
	return p.reply, p.err
}

// reign sets the reign the pool reports: promoted or not, seen for seen.
func (p *reignPool) reign(replid string, promoted bool, uptime, seen time.Duration) {
	second := int64(-1)
	if promoted {
		second = 1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reply = []any{"master", replid, second, "run1", int64(uptime / time.Second), seen.Milliseconds(), int64(0), int64(0),
		int64(-1), "node1"}
}

// takenBefore makes the reign's marker know of a takeover first seen ago.
func (p *reignPool) takenBefore(ago time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reply[8] = ago.Milliseconds()
}

// reports collects a Set's reports.
type reports struct {
	mu  sync.Mutex
	got []error
}

func (r *reports) report(_ context.Context, _ int, kind Report, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if kind == Quarantined {
		r.got = append(r.got, err)
	}
}

func (r *reports) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// TestShardCheckChosenAtNew checks which nodes get the shard check: a
// Redis Cluster node under the quarantine only, and that it alone reads.
func TestShardCheckChosenAtNew(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cluster    bool
		quarantine time.Duration
		reads      bool
	}{
		{"a cluster node under the quarantine", true, time.Minute, true},
		{"a cluster node without the quarantine", true, 0, false},
		{"a standalone node under the quarantine", false, time.Minute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &reignPool{cluster: tc.cluster}
			p.reign("r1", true, time.Hour, 0) // a promoted master at its first sight: out, if judged
			var rep reports
			s := New([]pool.Pool{p}, Config{Quarantine: tc.quarantine, Clock: clock.Real{}, Report: rep.report})
			if got := s.HealthReads(0); got != tc.reads {
				t.Fatalf("HealthReads = %v, want %v", got, tc.reads)
			}
			if got := s.HealthReadsAny(); got != tc.reads {
				t.Fatalf("HealthReadsAny = %v, want %v", got, tc.reads)
			}
			err := s.Health(context.Background(), 0, "orders")
			if tc.reads {
				if !errors.Is(err, ErrQuarantined) {
					t.Fatalf("Health = %v, want ErrQuarantined", err)
				}
				if len(p.keys) != 1 || p.keys[0] != "orders" {
					t.Fatalf("the reign read on keys %v, want the decision's key", p.keys)
				}
				return
			}
			if err != nil || p.reads != 0 {
				t.Fatalf("Health = %v after %d reads, want nil and none", err, p.reads)
			}
		})
	}
}

// TestShardCheck follows one cluster node's shard through a failover: a
// reign seen for long enough counts, a promoted one is out until the
// quarantine has passed since its first sight and is reported once, and a
// reign that cannot be read does not count.
func TestShardCheck(t *testing.T) {
	const q = 10 * time.Second
	p := &reignPool{cluster: true}
	var rep reports
	s := New([]pool.Pool{p}, Config{Quarantine: q, Clock: clock.Real{}, Report: rep.report})
	ctx := context.Background()

	p.reign("r1", false, time.Hour, time.Hour)
	if err := s.Health(ctx, 0, "k"); err != nil {
		t.Fatalf("an old reign: %v", err)
	}
	p.reign("r2", true, time.Hour, 0) // the replica took over
	for range 3 {
		if err := s.Health(ctx, 0, "k"); !errors.Is(err, ErrQuarantined) {
			t.Fatalf("a promoted master at its first sight: %v, want ErrQuarantined", err)
		}
	}
	if rep.count() != 1 {
		t.Fatalf("%d reports of one quarantined reign, want 1", rep.count())
	}
	p.reign("r2", true, time.Hour, q-time.Millisecond)
	if err := s.Health(ctx, 0, "k"); !errors.Is(err, ErrQuarantined) {
		t.Fatalf("a promoted master seen for less than the quarantine: %v", err)
	}
	p.reign("r2", true, time.Hour, q)
	if err := s.Health(ctx, 0, "k"); err != nil {
		t.Fatalf("a promoted master seen for the quarantine: %v", err)
	}
	p.reign("r3", false, 2*time.Second, 0) // restarted empty
	if err := s.Health(ctx, 0, "k"); !errors.Is(err, ErrQuarantined) {
		t.Fatalf("a master restarted 2s ago: %v", err)
	}
	if rep.count() != 2 {
		t.Fatalf("%d reports after a second quarantined reign, want 2", rep.count())
	}
	p.mu.Lock()
	p.err = errors.New("CLUSTERDOWN")
	p.mu.Unlock()
	if err := s.Health(ctx, 0, "k"); err == nil || errors.Is(err, ErrQuarantined) {
		t.Fatalf("an unreadable reign: %v, want the read error", err)
	}
}

// TestShardCheckPersistence checks what persistence of every write spares
// on a cluster node: a young master that never took over counts at once;
// a promoted master, or one whose marker knows of a takeover before its
// restart, is out as without it; persistence the Pool cannot tell, or one
// short of every write, spares nothing.
func TestShardCheckPersistence(t *testing.T) {
	const q = 10 * time.Second
	for _, tc := range []struct {
		name     string
		persists pool.Persistence
		promoted bool
		taken    time.Duration // > 0: the marker knows of a takeover that long ago
		counts   bool
		reads    bool // asks the Pool: only a restart keeps the master out
	}{
		{"young, persists every write", pool.PersistenceAlways, false, 0, true, true},
		{"young, fsync every second", pool.PersistencePartial, false, 0, false, true},
		{"young, persistence unknown", pool.PersistenceUnknown, false, 0, false, true},
		{"promoted, persists every write", pool.PersistenceAlways, true, 0, false, false},
		{"took over before its restart, persists every write", pool.PersistenceAlways, false, 3 * time.Second, false, false},
		{"took over longer than the quarantine before, persists every write", pool.PersistenceAlways, false, q, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &reignPool{cluster: true, persists: tc.persists}
			p.reign("r1", tc.promoted, 2*time.Second, 0)
			if tc.taken > 0 {
				p.takenBefore(tc.taken)
			}
			var rep reports
			s := New([]pool.Pool{p}, Config{Quarantine: q, Clock: clock.Real{}, Report: rep.report})
			err := s.Health(context.Background(), 0, "k")
			if (p.identities > 0) != tc.reads {
				t.Fatalf("%d persistence reads, want them only where a restart alone keeps the master out", p.identities)
			}
			if tc.counts && err != nil {
				t.Fatalf("Health = %v, want nil", err)
			}
			if !tc.counts && !errors.Is(err, ErrQuarantined) {
				t.Fatalf("Health = %v, want ErrQuarantined", err)
			}
		})
	}
}

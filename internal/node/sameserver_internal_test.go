package node

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/pool"
)

// idPool is a Pool that tells the identity the test gives it.
type idPool struct {
	pool.Pool // nil: only Addr and Identity are called
	addr      string
	mu        sync.Mutex
	id        pool.Identity
	known     bool
}

func (p *idPool) Addr() string { return p.addr }

func (p *idPool) Identity() (pool.Identity, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.id, p.known
}

func (p *idPool) learn(runID string) {
	p.mu.Lock()
	p.id, p.known = pool.Identity{RunID: runID}, true
	p.mu.Unlock()
}

// sameServerSet returns a Set over three idPools with the quarantine off,
// and the reports it made.
func sameServerSet() (*Set, []*idPool, *[]error) {
	ps := []*idPool{{addr: "127.0.0.1:7001"}, {addr: "localhost:7001"}, {addr: "127.0.0.1:7002"}}
	pools := make([]pool.Pool, len(ps))
	for i, p := range ps {
		pools[i] = p
	}
	var reports []error
	s := New(pools, Config{Clock: clock.Real{}, Report: func(_ context.Context, i int, r Report, err error) {
		if r == SameServer {
			reports = append(reports, err)
		}
	}})
	return s, ps, &reports
}

// Of two nodes that are one server, the yes judged first counts while the
// other's run is unknown, the second never does, and once both runs are
// known neither does; each node's misconfiguration is reported once.
func TestSameServerCountsOneServerOnceAtMost(t *testing.T) {
	ctx := context.Background()
	s, ps, reports := sameServerSet()
	ps[0].learn("run-p")
	ps[2].learn("run-q")
	assert.NoError(t, s.Health(ctx, 0, "k"), "node 1's run is not known yet")
	ps[1].learn("run-p")
	err := s.Health(ctx, 1, "k")
	var same *SameServerError
	require.ErrorAs(t, err, &same)
	assert.Equal(t, SameServerError{Node: 1, Other: 0, Addr: "localhost:7001", OtherAddr: "127.0.0.1:7001", RunID: "run-p"}, *same)
	assert.ErrorIs(t, s.Health(ctx, 0, "k"), ErrSameServer)
	assert.ErrorIs(t, s.Health(ctx, 1, "k"), ErrSameServer)
	assert.NoError(t, s.Health(ctx, 2, "k"))
	assert.Len(t, *reports, 2, "once per node")
	st, stErr := s.State(1)
	assert.Equal(t, StateFailing, st)
	assert.ErrorIs(t, stErr, ErrSameServer)

	// A refusal of a node that is another's server carries its answer.
	taken := errors.New("held")
	refused := s.Refused(0, taken)
	assert.ErrorIs(t, refused, ErrSameServer)
	assert.ErrorIs(t, refused, taken)
	assert.Equal(t, taken, s.Refused(2, taken))

	// The address now leads to another server (DNS, a proxy): it counts.
	ps[1].learn("run-r")
	assert.NoError(t, s.Health(ctx, 0, "k"))
	assert.NoError(t, s.Health(ctx, 1, "k"))
}

// A run_id that INFO hid ("") tells nothing: nodes that hide it count.
func TestSameServerIgnoresHiddenRuns(t *testing.T) {
	ctx := context.Background()
	s, ps, reports := sameServerSet()
	for _, p := range ps {
		p.learn("")
	}
	for i := range ps {
		assert.NoError(t, s.Health(ctx, i, "k"))
	}
	assert.Empty(t, *reports)
}

// The check on a healthy node's yes: one identity read per node, no
// allocation.
func BenchmarkHealthFiveServers(b *testing.B) {
	ps := make([]pool.Pool, 5)
	for i := range ps {
		p := &idPool{addr: "127.0.0.1:700" + string(rune('1'+i))}
		p.learn("run-" + string(rune('a'+i)))
		ps[i] = p
	}
	s := New(ps, Config{Clock: clock.Real{}, Report: func(context.Context, int, Report, error) {}})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Health(ctx, 0, "k"); err != nil {
			b.Fatal(err)
		}
	}
}

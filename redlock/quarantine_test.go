package redlock_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// knownPool is a Pool that tells the identity a test sets, its run_id
// made its own (run "new" of node 1 is "new@1"): each fake node is a
// server of its own, which a Client checks (ErrNodeSameServer).
type knownPool struct {
	pool.Pool
	node int
	mu   sync.Mutex
	id   pool.Identity
}

func (p *knownPool) Identity() (pool.Identity, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := p.id
	if id.RunID != "" {
		id.RunID += "@" + strconv.Itoa(p.node)
	}
	return id, true
}

func (p *knownPool) set(id pool.Identity) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.id = id
}

// knownNodes wraps n fake nodes so that each tells its identity; every node
// starts as an old run without persistence.
func knownNodes(t *testing.T, n int, now time.Time) []*knownPool {
	fn := newFakeNodes(t, n)
	out := make([]*knownPool, n)
	for i, p := range fn.pools {
		out[i] = &knownPool{Pool: p, node: i, id: pool.Identity{RunID: "old", Started: now.Add(-48 * time.Hour), Persistence: pool.PersistencePartial}}
	}
	return out
}

func asPools(ps []*knownPool) []pool.Pool {
	out := make([]pool.Pool, len(ps))
	for i, p := range ps {
		out[i] = p
	}
	return out
}

func TestQuarantineKeepsYoungNodesOut(t *testing.T) {
	parallel(t)
	clk := fakeClock()
	nodes := knownNodes(t, 3, clk.Now())
	rec := &recorder{}
	c := newFakeTimeClient(t, asPools(nodes), clk, redlock.WithQuarantine(time.Minute), redlock.WithObserver(rec))
	young := pool.Identity{RunID: "new", Started: clk.Now().Add(-10 * time.Second), Persistence: pool.PersistencePartial}
	nodes[0].set(young)
	nodes[1].set(young)

	for range 2 {
		_, err := c.TryLock(bg(), "k", time.Second)
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, redlock.ErrNodeQuarantined)
		assert.ErrorContains(t, err, "node 0")
		assert.ErrorContains(t, err, "counts in 50s")
		c.WaitIdle()
	}
	quarantined := 0
	for _, e := range rec.snapshot() {
		if e.Kind == redlock.NodeQuarantined {
			quarantined++
			require.ErrorIs(t, e.Err, redlock.ErrNodeQuarantined)
		}
	}
	assert.Equal(t, 2, quarantined, "each run is reported once")

	clk.Advance(50 * time.Second)
	l, err := c.TryLock(bg(), "k", time.Second)
	require.NoError(t, err, "the quarantine is over")
	require.NoError(t, l.Unlock(bg()))
}

func TestQuarantineSpares(t *testing.T) {
	parallel(t)
	clk := fakeClock()
	for name, id := range map[string]pool.Identity{
		"a node that persists every write": {RunID: "new", Started: clk.Now(), Persistence: pool.PersistenceAlways},
		"a declared fresh start":           {RunID: "new", Started: clk.Now(), Persistence: pool.PersistencePartial, FreshStart: true},
		"a node of unknown age":            {Persistence: pool.PersistenceUnknown},
	} {
		t.Run(name, func(t *testing.T) {
			nodes := knownNodes(t, 3, clk.Now())
			nodes[0].set(id)
			nodes[1].set(id)
			rec := &recorder{}
			c := newFakeTimeClient(t, asPools(nodes), clk, redlock.WithObserver(rec))
			for range 2 {
				l, err := c.TryLock(bg(), "k", time.Second)
				require.NoError(t, err)
				require.NoError(t, l.Unlock(bg()))
			}
			// A node's answer that came after the decision is checked
			// (and reported) by its own goroutine, which Close waits for.
			require.NoError(t, c.Close())
			unverified := 0
			for _, e := range rec.snapshot() {
				if e.Kind == redlock.NodeUnverified {
					unverified++
				}
			}
			if id.Started.IsZero() {
				assert.Equal(t, 2, unverified, "each unverified run is reported once")
			} else {
				assert.Zero(t, unverified)
			}
		})
	}
}

func TestQuarantineStopsExtensionsAndFences(t *testing.T) {
	parallel(t)
	clk := fakeClock()
	nodes := knownNodes(t, 3, clk.Now())
	c := newFakeTimeClient(t, asPools(nodes), clk)
	l, err := c.TryLock(bg(), "k", 10*time.Second)
	require.NoError(t, err)
	young := pool.Identity{RunID: "new", Started: clk.Now(), Persistence: pool.PersistencePartial}
	nodes[1].set(young)
	nodes[2].set(young)
	err = l.Extend(bg(), 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNodeQuarantined)

	_, err = c.TryLock(bg(), "f", 10*time.Second, redlock.WithFencing())
	require.ErrorIs(t, err, redlock.ErrNodeQuarantined)
	c.WaitIdle()
}

func TestQuarantineOption(t *testing.T) {
	_, err := redlock.New(newFakeNodes(t, 1).pools, redlock.WithQuarantine(-time.Second))
	require.ErrorContains(t, err, "quarantine must not be negative")
	assert.Equal(t, time.Minute+600*time.Millisecond+2*time.Millisecond, redlock.DefaultQuarantine)
}

func (r *recorder) snapshot() []redlock.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]redlock.Event(nil), r.events...)
}

package redlock_test

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redlockgo/redlock/internal/pooltest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlocktest"
)

// bubbleNodes are the kit's in-process nodes, each behind a pooltest
// wrapper, for tests in a testing/synctest bubble: time is virtual, so a
// bound is checked exactly and no load moves it. Call it inside the bubble.
type bubbleNodes struct {
	*redlocktest.Nodes
	faults []*pooltest.Faulty
	pools  []pool.Pool
}

func newBubbleNodes(t *testing.T, n int) *bubbleNodes {
	t.Helper()
	b := &bubbleNodes{Nodes: redlocktest.New(t, n)}
	for _, p := range b.Nodes.Pools() {
		f := pooltest.Wrap(p)
		b.faults = append(b.faults, f)
		b.pools = append(b.pools, faultyKit{f, p})
	}
	return b
}

// faultyKit is a kit node's wrapper that still tells the node's identity.
type faultyKit struct {
	*pooltest.Faulty
	inner pool.Pool
}

// Identity implements pool.Identifier.
func (f faultyKit) Identity() (pool.Identity, bool) { return identityOf(f.inner) }

var getScript = pool.NewScript(`return redis.call('GET', KEYS[1])`)

// get returns key's value on node i, read past its faults, and whether
// the key exists.
func (b *bubbleNodes) get(t *testing.T, i int, key string) (string, bool) {
	t.Helper()
	v, err := b.faults[i].Pool.Eval(t.Context(), getScript, []string{key})
	if err != nil || v == nil {
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		t.Fatalf("node %d: GET %s answered %T", i, key, v)
	}
	return s, true
}

// holders counts the nodes where key holds value.
func (b *bubbleNodes) holders(t *testing.T, key, value string) int {
	n := 0
	for i := range b.faults {
		if v, ok := b.get(t, i, key); ok && v == value {
			n++
		}
	}
	return n
}

// present counts the nodes where key exists.
func (b *bubbleNodes) present(t *testing.T, key string) int {
	n := 0
	for i := range b.faults {
		if _, ok := b.get(t, i, key); ok {
			n++
		}
	}
	return n
}

// delayCalls makes every call to each node given (every node if none is)
// reach it after a delay of up to most, drawn from a source seeded with
// seed, so that concurrent calls cross in an order the seed fixes.
func (b *bubbleNodes) delayCalls(seed uint64, most time.Duration, nodes ...int) {
	if len(nodes) == 0 {
		for i := range b.faults {
			nodes = append(nodes, i)
		}
	}
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, seed))
	for _, i := range nodes {
		b.faults[i].Before(func(string) {
			mu.Lock()
			d := time.Duration(rng.Int64N(int64(most)))
			mu.Unlock()
			time.Sleep(d)
		})
	}
}

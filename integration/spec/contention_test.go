package spec_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/redlock"
)

// Eight Clients, as eight processes, contend on one key; one node is
// blackholed while they do, three times. Each blackholed phase keeps the
// queue moving: most waits stay under one node timeout and none takes
// more than a node timeout past the bound of a hand-off. Splits among
// waiters with the silent node in them used to last a node timeout each,
// for every new Lock call: about half such phases crawled at twenty-odd
// acquisitions, with a median wait above the node timeout.
func TestContentionThroughABlackholeOnset(t *testing.T) {
	const ttl, nodeTimeout = 8 * time.Second, 400 * time.Millisecond // the default node timeout for 8s
	c := cluster.Start(t)
	var clients []*redlock.Client
	for range 8 {
		clients = append(clients, c.NewClient(t))
	}
	contend := func(d time.Duration) []time.Duration {
		var mu sync.Mutex
		var waits []time.Duration
		end := time.Now().Add(d)
		var wg sync.WaitGroup
		for _, cl := range clients {
			wg.Go(func() {
				for time.Now().Before(end) {
					start := time.Now()
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					l, err := cl.Lock(ctx, "hot", ttl)
					cancel()
					if !assert.NoError(t, err) {
						return
					}
					mu.Lock()
					waits = append(waits, time.Since(start))
					mu.Unlock()
					assert.NoError(t, l.Unlock(context.Background()))
				}
			})
		}
		wg.Wait()
		slices.Sort(waits)
		return waits
	}
	for round := range 3 {
		contend(500 * time.Millisecond) // healthy: warm, and the key busy
		require.NoError(t, c.Node(4).Blackhole(cluster.Both))
		waits := contend(time.Second)
		require.NoError(t, c.Node(4).Heal())
		require.NotEmpty(t, waits)
		median, longest := waits[len(waits)/2], waits[len(waits)-1]
		t.Logf("round %d: %d acquisitions with node 4 blackholed, median wait %v, longest %v", round, len(waits), median, longest)
		assert.Less(t, median, nodeTimeout, "round %d: the median wait", round)
		assert.Less(t, longest, nodeTimeout+time.Second, "round %d: the longest wait", round)
	}
}

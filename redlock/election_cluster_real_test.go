package redlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyspace"
)

// Elections on Redis Cluster nodes: the leader record is named in the
// election key's slot, whatever the name, and hand-off works as on
// standalone nodes.
func TestRealClusterElection(t *testing.T) {
	parallel(t)
	clusters, pools := clusterNodes(t, 3, 3)
	a := newClient(t, pools)
	b := newClient(t, pools)
	for _, name := range []string{"scheduler", "{orders}", "a}b", "x{y}z"} {
		t.Run(name, func(t *testing.T) {
			la, err := a.Campaign(bg(), name, "a", 10*time.Second)
			require.NoError(t, err)
			key := electionKey(t, name)
			requireInSlot(t, clusters, key, keyspace.Cluster{}.Leader(key))
			ld, err := b.Leader(bg(), name)
			require.NoError(t, err)
			assert.Equal(t, "a", ld.Value)
			assert.Equal(t, la.Term(), ld.Term)

			rb := campaignAsync(bg(), b, name, "b", 10*time.Second)
			require.Eventually(t, func() bool { // b waits in the queue on a majority
				n := 0
				for _, c := range clusterClients(t, clusters) {
					if k, err := c.Exists(bg(), keyspace.Cluster{}.Queue(key)[1]).Result(); err == nil && k == 1 {
						n++
					}
				}
				return n >= 2
			}, 10*time.Second, 5*time.Millisecond)
			require.NoError(t, la.Proclaim(bg(), "a2"))
			require.NoError(t, la.Resign(bg()))
			lb := within(t, rb, time.Second)
			assert.Greater(t, lb.Term(), la.Term())
			ld, err = a.Leader(bg(), name)
			require.NoError(t, err)
			assert.Equal(t, "b", ld.Value)
			require.NoError(t, lb.Resign(bg()))
		})
	}
}

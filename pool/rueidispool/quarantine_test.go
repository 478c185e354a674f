package rueidispool_test

import (
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/pool/conformance"
	"github.com/redlockgo/redlock/pool/rueidispool"
	"github.com/redlockgo/redlock/redlock"
)

// openAll returns a FromURL Pool per server, closed when t ends.
func openAll(t *testing.T, servers []*redistest.Server) []pool.Pool {
	t.Helper()
	pools := make([]pool.Pool, len(servers))
	for i, s := range servers {
		p, err := rueidispool.FromURL(s.URL())
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		pools[i] = p
	}
	return pools
}

// quarantineClient returns a Client over pools, closed when t ends, with a node
// timeout generous enough for a loaded machine.
func quarantineClient(t *testing.T, pools []pool.Pool, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.New(pools, append([]redlock.Option{redlock.WithNodeTimeout(time.Second)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestRealQuarantineOverRueidis is issue 38's steps over rueidis pools:
// three nodes without persistence, a 10s lock held, nodes 0 and 1
// restarted without their data. A new Client under a 3s quarantine must
// not take the key while the lock is valid, whether it uses the first
// Client's pools (their connections broke and open again) or pools of its
// own (their first connections are to the new runs).
func TestRealQuarantineOverRueidis(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ownPools bool
	}{{"SamePools", false}, {"OwnPools", true}} {
		t.Run(tc.name, func(t *testing.T) {
			servers := redistest.StartN(t, 3, redistest.NoPersistence)
			pools := openAll(t, servers)
			la, err := quarantineClient(t, pools).TryLock(bg(), "res", 10*time.Second)
			require.NoError(t, err)
			for _, s := range servers[:2] {
				s.Kill()
			}
			for _, s := range servers[:2] {
				s.Restart(t)
			}
			for _, s := range servers[:2] {
				n, err := s.Client(t).Exists(bg(), "res").Result()
				require.NoError(t, err)
				require.Zero(t, n, "the restarted node forgot the lock")
			}

			if tc.ownPools {
				pools = openAll(t, servers)
			}
			b := quarantineClient(t, pools, redlock.WithQuarantine(3*time.Second))
			// A call may fail on a connection the restart broke (a
			// network error, not a refusal); each attempt uses one up.
			// Every attempt must fail, and one soon names the quarantine.
			// Bounded by A's validity (less a second): past it a refusal
			// proves nothing. Under load the restarted nodes' redials can
			// miss many attempts' grace; each attempt must fail all the same.
			var quarantined, last error
			for time.Now().Before(la.Until().Add(-time.Second)) {
				lb, err := b.TryLock(bg(), "res", 10*time.Second)
				last = err
				require.Error(t, err, "B got the key A holds")
				require.Nil(t, lb)
				require.True(t, time.Now().Before(la.Until()), "A's lock ran out before the check ended")
				if errors.Is(err, redlock.ErrNodeQuarantined) {
					quarantined = err
					break
				}
			}
			require.ErrorIs(t, quarantined, redlock.ErrNotObtained, "no attempt named the quarantine within A's validity; the last: %v", last)
			require.ErrorIs(t, quarantined, redlock.ErrNodeQuarantined)
			var qe *redlock.QuorumError
			require.ErrorAs(t, quarantined, &qe)
			for _, n := range qe.Nodes {
				if errors.Is(n.Err, redlock.ErrNodeQuarantined) {
					assert.Less(t, n.Node, 2, "only the restarted nodes are quarantined: %v", n.Err)
				}
			}
			_ = la.Unlock(bg()) // A holds one node of three now: the release cannot reach a majority
		})
	}
}

// TestNewPoolIsQuarantined runs the adapter suite's restart case over
// Pools made by New over rueidis clients of the caller's, which tell the
// lock nothing of their servers (no pool.Identifier): the quarantine
// covers them all the same.
func TestNewPoolIsQuarantined(t *testing.T) {
	conformance.RunRestart(t, func(rawURL string, _ *tls.Config) (pool.Pool, error) {
		srv, _ := strings.CutPrefix(rawURL, "redis://")
		return rueidispool.New(newClient(t, srv)), nil
	})
}

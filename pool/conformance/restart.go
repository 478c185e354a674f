package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

// RunRestart runs the suite's restart case alone, for a Pool that cannot
// pass the rest (pool.New over a client the test made, whose URL options
// the Pool never sees): see testRestart. Run includes it.
func RunRestart(t *testing.T, newPool NewPool) {
	t.Helper()
	s := &suite{newPool: newPool}
	t.Run("Restart", s.testRestart)
}

// testRestart checks the lock's restart quarantine over the adapter's
// Pool, whatever it tells of its server: a lock held on three nodes, two
// of them restarted empty, and neither a Client made after the restart
// nor the holder's own, whose connections predate it, counts them while
// the lock may be valid. Each refusal names the quarantine once the
// restarted nodes answer.
func (s *suite) testRestart(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.NoPersistence) // declared fresh: they count at once
	urls := make([]string, len(servers))
	for i, srv := range servers {
		urls[i] = srv.URL()
	}
	const ttl = 30 * time.Second
	a := newClient(t, s.openAll(t, urls, nil), redlock.WithQuarantine(time.Hour))
	la, err := a.TryLock(ctx(t), "restart", ttl)
	require.NoError(t, err)
	for _, srv := range servers[:2] {
		srv.Kill()
	}
	for _, srv := range servers[:2] {
		srv.Restart(t)
	}
	b := newClient(t, s.openAll(t, urls, nil), redlock.WithQuarantine(time.Hour))
	for _, c := range []*redlock.Client{b, a} {
		for named := false; !named; {
			require.True(t, time.Now().Before(la.Until()), "no refusal named the quarantine while the lock was valid")
			_, err := c.TryLock(ctx(t), "restart", ttl)
			require.ErrorIs(t, err, redlock.ErrNotObtained, "a second holder while the first is valid")
			named = errors.Is(err, redlock.ErrNodeQuarantined)
		}
	}
	_ = la.Unlock(ctx(t)) // one node of three holds it now: the release reports the loss
}

package redlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// restartMajority takes a lock for ttl with a fresh Client on five nodes
// without persistence, then kills and restarts three of them at once (they
// come back empty). It returns the lock and when the restarts began.
func restartMajority(t *testing.T, servers []*redistest.Server, pools []pool.Pool, ttl time.Duration) (*redlock.Lock, time.Time) {
	t.Helper()
	a := newClient(t, pools)
	la, err := a.TryLock(bg(), "res", ttl)
	require.NoError(t, err)
	a.WaitIdle()
	require.Equal(t, 5, realHolders(t, servers, "res", la.Token()))
	restarted := time.Now()
	for _, s := range servers[:3] {
		s.Kill()
	}
	for _, s := range servers[:3] {
		s.Restart(t)
	}
	require.Equal(t, 2, realHolders(t, servers, "res", la.Token()), "the restarted nodes forgot the lock")
	rewarm(t, pools[:3])
	return la, restarted
}

// The classic hazard, with the quarantine off: three of five nodes restart
// without persistence while A holds the lock, and B gets it at once.
func TestRealRestartHazardWithoutQuarantine(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	la, _ := restartMajority(t, servers, pools, 10*time.Second)
	b := newClient(t, pools, redlock.WithQuarantine(0))
	// B tries while A's lock is valid. Nodes 3 and 4 refuse at once, and
	// an attempt then waits only the contended grace for the restarted
	// nodes: on a loaded machine one of them can answer after it (in 1 of
	// 7 quiet runs at -cpu 1,2), and B tries again.
	var lb *redlock.Lock
	redistest.WaitFor(t, time.Until(la.Until()), "without the quarantine, B to get the lock A holds", func() (bool, string) {
		var err error
		lb, err = b.TryLock(bg(), "res", 10*time.Second)
		if err != nil {
			b.WaitIdle() // the refused attempt's cleanup, before the next
			return false, err.Error()
		}
		return true, "granted"
	})
	now := time.Now()
	assert.True(t, now.Before(la.Until()) && now.Before(lb.Until()), "two valid holders")
}

// The same crash with the quarantine on: B is refused, with an error that
// names the quarantine, until the restarted nodes are older than it; by
// then A's lock (ttl within the quarantine) has expired.
func TestRealQuarantine(t *testing.T) {
	parallel(t)
	// A's lock must outlast the restarts and B's first refusals: 2s was
	// used up before a refusal named the quarantine in 1 of 7 quiet runs
	// at -cpu 1,2.
	const ttl, quarantine = 5 * time.Second, 6 * time.Second
	servers, pools := realNodes(t, 5)
	la, restarted := restartMajority(t, servers, pools, ttl)
	rec := &recorder{}
	b := newClient(t, pools, redlock.WithQuarantine(quarantine), redlock.WithObserver(rec))

	// B is refused while A's lock is valid, and a refusal names the
	// quarantine. The two nodes that kept A's lock refuse at once, and the
	// attempt then waits only the contended grace (50ms at most) for the
	// three others: on a loaded machine their answers can come after the
	// decision (ErrPending), and that refusal cannot name them. So B tries
	// while A's lock is valid, each try refused (refusedForA), until a
	// refusal names the quarantine.
	var err error
	named := false
	for !named && time.Now().Before(la.Until()) {
		_, err = b.TryLock(bg(), "res", ttl)
		named = refusedForA(t, err) && time.Now().Before(la.Until())
		b.WaitIdle() // the refused attempt's cleanup, before the next
	}
	require.True(t, named, "no refusal while A's lock was valid named the quarantine; the last: %v", err)

	// Poll: each refusal is the quarantine's (or cut by the grace before
	// the quarantined nodes answered), until it ends.
	deadline := time.Now().Add(quarantine + 10*time.Second)
	var lb *redlock.Lock
	for lb == nil {
		require.True(t, time.Now().Before(deadline), "B never got the lock; the last refusal: %v", err)
		time.Sleep(100 * time.Millisecond)
		lb, err = b.TryLock(bg(), "res", ttl)
		if err != nil {
			refusedForA(t, err)
		}
	}
	got := time.Now()
	assert.False(t, got.Before(restarted.Add(quarantine)), "B got the lock %v after the restarts", got.Sub(restarted))
	assert.True(t, got.After(la.Until()), "A's lock had expired")
	require.NoError(t, lb.Unlock(bg()))

	quarantined := map[int]bool{}
	for _, e := range rec.snapshot() {
		if e.Kind == redlock.NodeQuarantined {
			var ne *redlock.NodeError
			require.ErrorAs(t, e.Err, &ne)
			assert.False(t, quarantined[ne.Node], "node %d reported twice", ne.Node)
			quarantined[ne.Node] = true
		}
	}
	assert.Equal(t, map[int]bool{0: true, 1: true, 2: true}, quarantined)
}

// refusedForA checks a refusal of B in TestRealQuarantine: nodes 0-2
// (restarted, quarantined) refuse with the quarantine or had not answered
// when the attempt decided; nodes 3 and 4 (which kept A's lock until its
// TTL) refuse with A's hold or had not answered. It reports whether the
// refusal names the quarantine.
func refusedForA(t *testing.T, err error) bool {
	t.Helper()
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	var qe *redlock.QuorumError
	require.ErrorAs(t, err, &qe)
	for _, n := range qe.Nodes {
		why := redlock.ErrNodeQuarantined
		if n.Node >= 3 {
			why = redlock.ErrTaken
		}
		require.True(t, errors.Is(n.Err, why) || errors.Is(n.Err, redlock.ErrPending),
			"node %d refused with %v, want %v or no answer before the decision: %v", n.Node, n.Err, why, err)
	}
	return errors.Is(err, redlock.ErrNodeQuarantined)
}

// A node that hides CONFIG (a managed service) is taken not to persist
// every write, though it does: after a restart it is quarantined.
func TestRealQuarantineWithoutConfig(t *testing.T) {
	parallel(t)
	hidden := redistest.StartWith(t, redistest.AOFAlways, "--rename-command", "CONFIG", "")
	shown := redistest.StartWith(t, redistest.AOFAlways)
	for _, tc := range []struct {
		srv  *redistest.Server
		want error
	}{{shown, nil}, {hidden, redlock.ErrNodeQuarantined}} {
		p, err := pool.FromURL(tc.srv.URL())
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		c := newClient(t, []pool.Pool{p})
		tc.srv.Restart(t)
		l, err := c.TryLock(bg(), "res", time.Second)
		if tc.want == nil {
			require.NoError(t, err, "appendfsync always, and CONFIG says so")
			require.NoError(t, l.Unlock(bg()))
			continue
		}
		require.ErrorIs(t, err, tc.want)
		assert.ErrorContains(t, err, "persistence unknown")
	}
}

// A node that hides INFO cannot be aged: it counts, and is reported.
func TestRealQuarantineWithoutInfo(t *testing.T) {
	parallel(t)
	srv := redistest.StartWith(t, redistest.NoPersistence, "--rename-command", "INFO", "")
	p, err := pool.FromURL(srv.URL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	rec := &recorder{}
	c := newClient(t, []pool.Pool{p}, redlock.WithObserver(rec))
	l, err := c.TryLock(bg(), "res", time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Unlock(bg()))
	assert.Contains(t, rec.kinds(), "node_unverified")
}

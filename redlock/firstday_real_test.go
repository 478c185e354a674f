package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// A new user's first hour (issue 59): nodes started as a user starts them
// (redis-server with no appendonly and no fresh-start declaration), a
// Client with no option.

// stockNodes starts n such nodes and returns them with a FromURLs pool
// each, as the README's Quick start opens them.
func stockNodes(t *testing.T, n int) ([]*redistest.Server, []pool.Pool) {
	t.Helper()
	servers := redistest.StartNUndeclared(t, n, redistest.NoPersistence)
	urls := make([]string, n)
	for i, s := range servers {
		urls[i] = s.URL()
	}
	pools, err := pool.FromURLs(urls)
	require.NoError(t, err)
	for _, p := range pools {
		t.Cleanup(func() { _ = p.Close() })
	}
	return servers, pools
}

// A blocking call whose deadline comes before the nodes can count returns
// at once, not at its deadline, with an error that names the quarantine,
// says when the nodes count, and is unavailable, never contended: Lock
// (the queue), RLock and AcquirePermit (retries), LockAll and Campaign.
func TestRealDeadlineBeforeQuarantineEndsReturnsAtOnce(t *testing.T) {
	parallel(t)
	_, pools := stockNodes(t, 5)
	c := newClient(t, pools)
	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Lock", func(ctx context.Context) error { _, err := c.Lock(ctx, "k", 10*time.Second); return err }},
		{"Do", func(ctx context.Context) error {
			return c.Do(ctx, "k", 10*time.Second, func(context.Context) error { return nil })
		}},
		{"RLock", func(ctx context.Context) error { _, err := c.RLock(ctx, "r", 10*time.Second); return err }},
		{"AcquirePermit", func(ctx context.Context) error {
			_, err := c.AcquirePermit(ctx, "p", 2, 10*time.Second)
			return err
		}},
		{"LockAll", func(ctx context.Context) error {
			_, err := c.LockAll(ctx, []string{"a", "b"}, 10*time.Second)
			return err
		}},
		{"Campaign", func(ctx context.Context) error { _, err := c.Campaign(ctx, "e", "v", 10*time.Second); return err }},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(bg(), 3*time.Second)
			defer cancel()
			start := time.Now()
			err := tc.call(ctx)
			took := time.Since(start)
			require.Error(t, err)
			assert.Less(t, took, 2*time.Second, "returned %v after the call, the deadline being 3s: %v", took, err)
			assert.NoError(t, ctx.Err(), "returned at its deadline")
			assert.True(t, redlock.IsUnavailable(err), "%v", err)
			assert.False(t, redlock.IsContended(err), "%v", err)
			assert.ErrorIs(t, err, redlock.ErrNodeQuarantined)
			assert.Contains(t, err.Error(), "restart quarantine outlasts the call's deadline")
			assert.Regexp(t, `a majority counts in [0-9hms]+, at \d\d:\d\d:\d\d`, err.Error())
		})
	}
}

// A quarantined node's copy of a key holds no lock that counts: with the
// key on every node, all of them quarantined, Status does not call it
// held, and an acquisition's refusal is unavailable, not contended.
func TestRealQuarantinedCopiesAreNotHolders(t *testing.T) {
	parallel(t)
	servers, pools := stockNodes(t, 5)
	for _, s := range servers {
		require.NoError(t, s.Client(t).Set(bg(), "k", "someone", time.Minute).Err())
	}
	c := newClient(t, pools)
	_, err := c.TryLock(bg(), "k", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	// The first refusals came before every node's run was known; the
	// Client knows them all once each node answered.
	redistest.WaitFor(t, 10*time.Second, "every node known quarantined", func() (bool, string) {
		st, err := c.Status(bg(), "k")
		if err != nil {
			return false, err.Error()
		}
		for _, n := range st.Nodes {
			if n.Quarantined == 0 {
				return false, "node not known quarantined"
			}
		}
		return true, ""
	})
	st, err := c.Status(bg(), "k")
	require.NoError(t, err)
	assert.False(t, st.Held, "held on quarantined nodes only: %+v", st)
	assert.Zero(t, st.Holders)
	assert.Equal(t, "lock", st.Kind, "the key is still there")

	_, err = c.TryLock(bg(), "k", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	assert.False(t, redlock.IsContended(err), "%v", err)
	assert.True(t, redlock.IsUnavailable(err), "%v", err)
	assert.NotErrorIs(t, err, redlock.ErrTaken)
	var qe *redlock.QuorumError
	require.ErrorAs(t, err, &qe)
	for _, n := range qe.Nodes {
		if !errors.Is(n.Err, redlock.ErrPending) {
			assert.ErrorIs(t, n.Err, redlock.ErrNodeQuarantined, "node %d", n.Node)
		}
	}
}

// The longest TTL is a setting: a TTL above it is refused with an error
// that names the option; each Client records its bound on the nodes, the
// largest winning; and a Client with a smaller bound quarantines a
// restarted node for the recorded one.
func TestRealMaxTTLIsRecordedAndLengthensAShorterQuarantine(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5) // declared fresh: they count at once
	a := newClient(t, pools, redlock.WithMaxTTL(10*time.Minute))
	b := newClient(t, pools)

	_, err := b.TryLock(bg(), "k", 2*time.Minute)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WithMaxTTL(2m0s)")

	lb, err := b.TryLock(bg(), "k", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, lb.Unlock(bg()))
	// Both return at the majority: a straggler of b's SET landing after
	// a's attempt would keep a's grant, and its record, off that node.
	b.WaitIdle()
	la, err := a.TryLock(bg(), "k", 5*time.Minute)
	require.NoError(t, err)
	a.WaitIdle()
	for _, s := range servers {
		v, err := s.Client(t).Get(bg(), "redlock:max-ttl").Result()
		require.NoError(t, err)
		assert.Equal(t, "600000", v, "the largest bound wins on %s", s.Addr())
	}

	// Three nodes restart empty: A's lock, 5m long, is forgotten there.
	for _, s := range servers[:3] {
		s.Kill()
	}
	for _, s := range servers[:3] {
		s.Restart(t)
	}
	rewarm(t, pools[:3])
	_, err = b.TryLock(bg(), "k", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained, "a second holder while A's lock is valid")
	// B reads the bound its peers recorded, and quarantines for it.
	redistest.WaitFor(t, 10*time.Second, "B to quarantine for the recorded 10m", func() (bool, string) {
		st, err := b.Status(bg(), "k")
		if err != nil {
			return false, err.Error()
		}
		for _, n := range st.Nodes[:3] {
			if n.Quarantined < 9*time.Minute {
				return false, n.Quarantined.String()
			}
		}
		return true, ""
	})
	_ = la
}

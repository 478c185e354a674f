package redlock_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
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

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The README's Quick start, as written (Do with the defaults, no
// declaration, no option), gets its lock within 75s of the nodes' start,
// and its wait for the quarantine is told in one line on Go's default
// logger. The package's one test that waits out a default quarantine.
func TestRealQuickStartGetsLockWithin75sOnStockNodes(t *testing.T) {
	held := first(t)
	started := time.Now()
	_, pools := stockNodes(t, 5)

	var logged syncBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	locks, err := redlock.New(pools)
	require.NoError(t, err)
	defer func() { _ = locks.Shutdown(context.Background()) }()
	held.idle() // from here on it only waits for the quarantine

	ran := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- locks.Do(context.Background(), "invoice:42", 10*time.Second, func(ctx context.Context) error {
			ran <- struct{}{}
			return nil
		})
	}()
	bound := time.NewTimer(time.Until(started.Add(75 * time.Second)))
	defer bound.Stop()
	select {
	case err = <-done:
	case <-bound.C:
		_ = locks.Close() // ends the Do (ErrClosed)
		t.Fatalf("no lock 75s after the nodes' start: the Do ended with %v", <-done)
	}
	require.NoError(t, err)
	require.Len(t, ran, 1, "fn ran under the lock")
	t.Logf("the Quick start got its lock %v after the nodes' start", time.Since(started))

	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(logged.String()), "\n") {
		if strings.Contains(l, "key=invoice:42") {
			lines = append(lines, l)
		}
	}
	require.Len(t, lines, 1, "one line on slog.Default() when the wait began: %q", logged.String())
	assert.Contains(t, lines[0], `msg="redlock: waiting for the nodes' restart quarantine"`)
	assert.Contains(t, lines[0], "counts_in=")
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

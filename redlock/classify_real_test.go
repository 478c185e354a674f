package redlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

// IsContended and IsUnavailable on real redis-server processes: the
// failures of every acquisition on a held key, with a majority of the
// nodes down, and with a majority quarantined.

// acquisition is one way to acquire, on a key of its own (so that the
// acquisitions tried at once do not contend with one another), and how to
// hold that key against it.
type acquisition struct {
	name string
	try  func(ctx context.Context, c *redlock.Client, key string) error
	hold func(c *redlock.Client, key string) (release func(), err error)
}

// acquisitions lists every acquisition; fn is what the Do-like ones run.
func acquisitions(fn func(context.Context) error) []acquisition {
	const ttl = doTTL
	got := func(l *redlock.Lock, err error) error {
		if err == nil {
			_ = l.Unlock(bg())
			return errors.New("obtained")
		}
		return err
	}
	holdLock := func(c *redlock.Client, key string) (func(), error) {
		l, err := c.TryLock(bg(), key, ttl, redlock.WithAutoExtend(0))
		return func() { _ = l.Unlock(bg()) }, err
	}
	holdPermit := func(c *redlock.Client, key string) (func(), error) {
		l, err := c.TryAcquirePermit(bg(), key, 1, ttl, redlock.WithAutoExtend(0))
		return func() { _ = l.Unlock(bg()) }, err
	}
	holdElection := func(c *redlock.Client, key string) (func(), error) {
		ls, err := c.Campaign(bg(), key, "holder", ttl)
		return func() { _ = ls.Resign(bg()) }, err
	}
	all := func(key string) []string { return []string{key, key + "-other"} }
	type C = *redlock.Client
	type X = context.Context
	return []acquisition{
		{"TryLock", func(ctx X, c C, k string) error { return got(c.TryLock(ctx, k, ttl)) }, holdLock},
		{"Lock", func(ctx X, c C, k string) error { return got(c.Lock(ctx, k, ttl)) }, holdLock},
		{"TryRLock", func(ctx X, c C, k string) error { return got(c.TryRLock(ctx, k, ttl)) }, holdLock},
		{"RLock", func(ctx X, c C, k string) error { return got(c.RLock(ctx, k, ttl)) }, holdLock},
		{"TryLockAll", func(ctx X, c C, k string) error { return got(c.TryLockAll(ctx, all(k), ttl)) }, holdLock},
		{"LockAll", func(ctx X, c C, k string) error { return got(c.LockAll(ctx, all(k), ttl)) }, holdLock},
		{"TryAcquirePermit", func(ctx X, c C, k string) error { return got(c.TryAcquirePermit(ctx, k, 1, ttl)) }, holdPermit},
		{"AcquirePermit", func(ctx X, c C, k string) error { return got(c.AcquirePermit(ctx, k, 1, ttl)) }, holdPermit},
		{"TryDo", func(ctx X, c C, k string) error { return c.TryDo(ctx, k, ttl, fn) }, holdLock},
		{"Do", func(ctx X, c C, k string) error { return c.Do(ctx, k, ttl, fn) }, holdLock},
		{"DoAll", func(ctx X, c C, k string) error { return c.DoAll(ctx, all(k), ttl, fn) }, holdLock},
		{"Lead", func(ctx X, c C, k string) error { return c.Lead(ctx, k, "v", ttl, fn) }, holdElection},
		{"Campaign", func(ctx X, c C, k string) error {
			ls, err := c.Campaign(ctx, k, "v", ttl)
			if err == nil {
				_ = ls.Resign(bg())
				return errors.New("obtained")
			}
			return err
		}, holdElection},
	}
}

// tryAll runs every acquisition with c at once, each on key "res-" + its
// name and bounded by a context of d, and returns each failure by name. A
// call that succeeds, or a function run without the lock, fails the test.
// With a holder, each key is held first, until the test ends.
func tryAll(t *testing.T, c, holder *redlock.Client, d time.Duration) map[string]error {
	t.Helper()
	var ran atomic.Bool
	as := acquisitions(func(context.Context) error { ran.Store(true); return nil })
	if holder != nil {
		for _, a := range as {
			release, err := a.hold(holder, "res-"+a.name)
			require.NoError(t, err, a.name)
			t.Cleanup(release)
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(map[string]error, len(as))
	for _, a := range as {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(bg(), d)
			defer cancel()
			err := a.try(ctx, c, "res-"+a.name)
			mu.Lock()
			defer mu.Unlock()
			errs[a.name] = err
		})
	}
	wg.Wait()
	assert.False(t, ran.Load(), "fn ran without the lock")
	return errs
}

func TestRealContendedWhenHeld(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 5)
	// A wait is cut after two node timeouts: the key is held throughout.
	for name, err := range tryAll(t, newClient(t, pools), newClient(t, pools), 2*time.Second) {
		require.ErrorIs(t, err, redlock.ErrNotObtained, name)
		assert.True(t, redlock.IsContended(err), "%s: %v", name, err)
		assert.False(t, redlock.IsUnavailable(err), "%s: %v", name, err)
	}
}

func TestRealContendedAnotherKind(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 5)
	c := newClient(t, pools)
	p, err := c.TryAcquirePermit(bg(), "res", 2, doTTL)
	require.NoError(t, err)
	defer p.Unlock(bg())
	_, err = c.TryLock(bg(), "res", doTTL)
	require.ErrorIs(t, err, redlock.ErrWrongKind)
	assert.True(t, redlock.IsContended(err), "%v", err)
	assert.False(t, redlock.IsUnavailable(err))
}

func TestRealUnavailableMajorityDown(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	for _, s := range servers[:3] {
		s.Kill()
	}
	for name, err := range tryAll(t, newClient(t, pools), nil, 2*time.Second) {
		require.ErrorIs(t, err, redlock.ErrNotObtained, name)
		assert.True(t, redlock.IsUnavailable(err), "%s: %v", name, err)
		assert.False(t, redlock.IsContended(err), "%s: %v", name, err)
	}
}

// Three of five nodes restarted without their data just now: their yes
// does not count (restart quarantine), so no lock can be taken although
// nobody holds the key.
func TestRealUnavailableMajorityQuarantined(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	restartEmpty(t, servers[:3])
	for name, err := range tryAll(t, newClient(t, pools), nil, 2*time.Second) {
		require.ErrorIs(t, err, redlock.ErrNotObtained, name)
		require.ErrorIs(t, err, redlock.ErrNodeQuarantined, name)
		assert.True(t, redlock.IsUnavailable(err), "%s: %v", name, err)
		assert.False(t, redlock.IsContended(err), "%s: %v", name, err)
	}
}

// restartEmpty restarts servers, which do not persist: they come back
// empty, and recently started.
func restartEmpty(t *testing.T, servers []*redistest.Server) {
	t.Helper()
	for _, s := range servers {
		s.Restart(t)
	}
}

// Errors that are not an acquisition's failure are neither.
func TestRealNeitherContendedNorUnavailable(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 3)
	c := newClient(t, pools)
	_, empty := c.TryLock(bg(), "", doTTL)
	_, resume := c.Resume(bg(), "res", "NOT-A-TOKEN", doTTL)
	require.NoError(t, c.Close())
	_, closed := c.TryLock(bg(), "res", doTTL)
	for _, err := range []error{empty, resume, closed} {
		require.Error(t, err)
		assert.False(t, redlock.IsContended(err), "%v", err)
		assert.False(t, redlock.IsUnavailable(err), "%v", err)
	}
}

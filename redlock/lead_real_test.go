package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

// Lead on real redis-server processes (lead.go).

// leadAsync runs c.Lead in a goroutine; fn's context reaches leading once
// fn runs, and Lead's error (or its panic, as an error) the returned
// channel.
func leadAsync(c *redlock.Client, election, value string, fn func(ctx context.Context) error) (leading <-chan context.Context, result <-chan error) {
	lead := make(chan context.Context, 1)
	out := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				out <- fmt.Errorf("panic: %v", r)
			}
		}()
		out <- c.Lead(bg(), election, value, doTTL, func(ctx context.Context) error {
			lead <- ctx
			return fn(ctx)
		})
	}()
	return lead, out
}

// receive returns what ch delivers within d, or fails the test.
func receive[T any](t *testing.T, what string, ch <-chan T, d time.Duration) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s: nothing within %v", what, d)
		var zero T
		return zero
	}
}

// dropLocks deletes every key on the servers but the fresh-start mark:
// the leadership's key and record are gone, as after a flush.
func dropLocks(t *testing.T, servers []*redistest.Server) {
	t.Helper()
	for _, s := range servers {
		c := s.Client(t)
		keys, err := c.Keys(bg(), "*").Result()
		require.NoError(t, err)
		keys = slices.DeleteFunc(keys, func(k string) bool { return k == redistest.FreshStartKey })
		if len(keys) > 0 {
			require.NoError(t, c.Del(bg(), keys...).Err())
		}
	}
}

// When the leadership is lost, fn's context ends with a cause wrapping
// ErrLockLost, and Lead returns the loss: the keys deleted on the nodes
// (the next extension is refused), or a majority of the nodes stopped (no
// extension gets through before the loss point).
func TestRealLeadLoss(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name string
		lose func(t *testing.T, servers []*redistest.Server)
	}{
		{"keys deleted", dropLocks},
		{"three of five nodes stopped", func(_ *testing.T, servers []*redistest.Server) {
			for _, s := range servers[:3] {
				s.Kill()
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			servers, pools := realNodes(t, 5)
			c := newClient(t, pools)
			leading, result := leadAsync(c, "sched", "a", func(ctx context.Context) error {
				<-ctx.Done()
				return context.Cause(ctx)
			})
			ctx := receive(t, "leading", leading, doTTL)
			require.NoError(t, ctx.Err())
			tc.lose(t, servers)
			// The loss is declared before the validity of the last
			// extension ends: within one ttl, plus the node timeout of a
			// resignation on stopped nodes.
			err := receive(t, "Lead's return", result, doTTL+2*time.Second)
			require.ErrorIs(t, err, redlock.ErrLockLost)
			require.ErrorIs(t, context.Cause(ctx), redlock.ErrLockLost)
			assert.ErrorIs(t, ctx.Err(), context.Canceled)
		})
	}
}

// Lead resigns when fn returns, and when fn panics: a campaigner waiting
// in the queue leads at once, long before the first leadership could have
// run out.
func TestRealLeadResigns(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name  string
		panic bool
	}{{"return", false}, {"panic", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			servers, pools := realNodes(t, 5)
			a := newClient(t, pools)
			b := newClient(t, pools)
			finish := make(chan struct{})
			done := errors.New("leader's work done")
			leading, result := leadAsync(a, "sched", "a", func(ctx context.Context) error {
				<-finish
				if tc.panic {
					panic("leader's work failed")
				}
				return done
			})
			ctx := receive(t, "leading", leading, doTTL)
			next := campaignAsync(bg(), b, "sched", "b", doTTL)
			waitCampaigner(t, servers, "sched")
			close(finish)
			err := receive(t, "Lead's return", result, doTTL)
			if tc.panic {
				require.EqualError(t, err, "panic: leader's work failed", "Lead re-raises fn's panic")
			} else {
				require.ErrorIs(t, err, done)
			}
			// Handed over at once: an unresigned leadership lasts at least
			// two thirds of its ttl after its last extension.
			ls := within(t, next, doTTL/2)
			defer ls.Resign(bg())
			require.ErrorIs(t, context.Cause(ctx), redlock.ErrNotHeld, "fn's context ends with the leadership")
			require.NotErrorIs(t, context.Cause(ctx), redlock.ErrLockLost)
			ld, err := a.Leader(bg(), "sched")
			require.NoError(t, err)
			assert.Equal(t, "b", ld.Value)
		})
	}
}

// Leadership.Context ends with the leadership, its cause saying why:
// resigned (ErrNotHeld), or the Client closed (ErrLockLost, ErrClosed).
// Close waits for the goroutine that ends it.
func TestRealLeadershipContext(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 3)
	c := newClient(t, pools)
	ls, err := c.Campaign(bg(), "sched", "a", doTTL)
	require.NoError(t, err)
	ctx := ls.Context()
	require.Same(t, ctx, ls.Context(), "one context per leadership")
	require.NoError(t, ctx.Err())
	require.NoError(t, ls.Resign(bg()))
	select {
	case <-ctx.Done(): // right after Resign: a goroutine waits for Done
	case <-time.After(doTTL):
		t.Fatal("the context outlived the leadership")
	}
	assert.ErrorIs(t, ctx.Err(), context.Canceled)
	assert.ErrorIs(t, context.Cause(ctx), redlock.ErrNotHeld)
	assert.NotErrorIs(t, context.Cause(ctx), redlock.ErrLockLost)
	assert.Same(t, ctx, ls.Context())

	closing := newClient(t, pools)
	ls, err = closing.Campaign(bg(), "other", "a", doTTL)
	require.NoError(t, err)
	ctx = ls.Context()
	require.NoError(t, closing.Close())
	require.Error(t, ctx.Err(), "ended once Close returned")
	assert.ErrorIs(t, context.Cause(ctx), redlock.ErrLockLost)
	assert.ErrorIs(t, context.Cause(ctx), redlock.ErrClosed)

	var none *redlock.Leadership
	assert.ErrorIs(t, context.Cause(none.Context()), redlock.ErrNotHeld)
}

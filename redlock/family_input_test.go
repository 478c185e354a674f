package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

func TestRLockAndPermitRejectBadInput(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	var nilCtx context.Context
	type call func(ctx context.Context, key string, limit int, ttl time.Duration, opts ...redlock.LockOption) (*redlock.Lock, error)
	calls := map[string]call{
		"TryRLock": func(ctx context.Context, key string, _ int, ttl time.Duration, opts ...redlock.LockOption) (*redlock.Lock, error) {
			return c.TryRLock(ctx, key, ttl, opts...)
		},
		"RLock": func(ctx context.Context, key string, _ int, ttl time.Duration, opts ...redlock.LockOption) (*redlock.Lock, error) {
			return c.RLock(ctx, key, ttl, opts...)
		},
		"TryAcquirePermit": c.TryAcquirePermit,
		"AcquirePermit":    c.AcquirePermit,
	}
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		key    string
		limit  int
		ttl    time.Duration
		opts   []redlock.LockOption
		want   string
		permit bool // only the permit calls check it
	}{
		{name: "nil context", ctx: nilCtx, key: "k", limit: 1, ttl: time.Second, want: "nil context"},
		{name: "empty key", ctx: bg(), key: "", limit: 1, ttl: time.Second, want: "empty key"},
		{name: "zero ttl", ctx: bg(), key: "k", limit: 1, ttl: 0, want: "ttl"},
		{name: "ttl above MaxTTL", ctx: bg(), key: "k", limit: 1, ttl: redlock.MaxTTL + time.Second, want: "ttl"},
		{name: "ttl above the max TTL", ctx: bg(), key: "k", limit: 1, ttl: redlock.DefaultMaxTTL + time.Second, want: "WithMaxTTL(1m1s)"},
		{name: "nil retry", ctx: bg(), key: "k", limit: 1, ttl: time.Second, opts: []redlock.LockOption{redlock.WithRetry(nil)}, want: "nil retry"},
		{name: "ttl too short to auto-extend", ctx: bg(), key: "k", limit: 1, ttl: 5 * time.Millisecond,
			opts: []redlock.LockOption{redlock.WithAutoExtend(0)}, want: "too short to auto-extend"},
		{name: "zero limit", ctx: bg(), key: "k", limit: 0, ttl: time.Second, want: "permit limit", permit: true},
		{name: "negative limit", ctx: bg(), key: "k", limit: -3, ttl: time.Second, want: "permit limit", permit: true},
		{name: "limit above MaxPermits", ctx: bg(), key: "k", limit: redlock.MaxPermits + 1, ttl: time.Second, want: "permit limit", permit: true},
	} {
		for name, call := range calls {
			isPermit := name == "TryAcquirePermit" || name == "AcquirePermit"
			if tc.permit && !isPermit {
				continue
			}
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				before := fn.faults[0].Calls()
				l, err := call(tc.ctx, tc.key, tc.limit, tc.ttl, tc.opts...)
				require.ErrorContains(t, err, tc.want)
				assert.Nil(t, l)
				assert.Equal(t, before, fn.faults[0].Calls(), "no node was called")
			})
		}
	}
}

func TestRLockAndPermitOnClosedOrNilClient(t *testing.T) {
	var nilClient *redlock.Client
	_, err := nilClient.TryRLock(bg(), "k", time.Second)
	require.Error(t, err)
	_, err = nilClient.AcquirePermit(bg(), "k", 1, time.Second)
	require.Error(t, err)

	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	require.NoError(t, c.Close())
	_, err = c.RLock(bg(), "k", time.Second)
	require.ErrorIs(t, err, redlock.ErrClosed)
	_, err = c.TryAcquirePermit(bg(), "k", 2, time.Second)
	require.ErrorIs(t, err, redlock.ErrClosed)
}

func TestRLockAndPermitOnMiniredis(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	r, err := c.TryRLock(bg(), "doc", time.Second)
	require.NoError(t, err)
	_, err = c.TryLock(bg(), "doc", time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.NoError(t, r.Unlock(bg()))
	c.WaitIdle()
	assert.Zero(t, fn.present("doc"))

	p, err := c.TryAcquirePermit(bg(), "sem", 1, time.Second)
	require.NoError(t, err)
	_, err = c.TryAcquirePermit(bg(), "sem", 1, time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.NoError(t, p.Unlock(bg()))
	c.WaitIdle()
	assert.Zero(t, fn.present("sem"))
}

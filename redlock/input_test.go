package redlock_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// valuePool is an uncomparable Pool implementation: comparing two of them
// with == would panic, which New must not do.
type valuePool struct {
	pool.Pool
	tags []string
}

func TestNewRejectsBadInput(t *testing.T) {
	fn := newFakeNodes(t, 2)
	var nilPtr *struct{ pool.Pool }
	for _, tc := range []struct {
		name  string
		pools []pool.Pool
		opts  []redlock.Option
		want  string
	}{
		{"no pools", nil, nil, "no pools"},
		{"nil pool", []pool.Pool{fn.pools[0], nil}, nil, "pool 1 is nil"},
		{"typed nil pool", []pool.Pool{nilPtr}, nil, "pool 0 is nil"},
		{"same pool twice", []pool.Pool{fn.pools[0], fn.pools[0]}, nil, "same as pool 0"},
		{"same address twice", []pool.Pool{fn.pools[1], valuePool{Pool: fn.pools[1]}}, nil, "same address"},
		{"zero node timeout", fn.pools, []redlock.Option{redlock.WithNodeTimeout(0)}, "node timeout"},
		{"negative drift", fn.pools, []redlock.Option{redlock.WithDriftFactor(-1)}, "drift factor"},
		{"NaN drift", fn.pools, []redlock.Option{redlock.WithDriftFactor(math.NaN())}, "drift factor"},
		{"nil clock", fn.pools, []redlock.Option{redlock.WithClock(nil)}, "nil clock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := redlock.New(tc.pools, tc.opts...)
			require.ErrorContains(t, err, tc.want)
			assert.Nil(t, c)
		})
	}
	// Uncomparable pools with different addresses are fine.
	fn2 := newFakeNodes(t, 2)
	c, err := redlock.New([]pool.Pool{valuePool{Pool: fn2.pools[0]}, valuePool{Pool: fn2.pools[1]}})
	require.NoError(t, err)
	require.NoError(t, c.Close())
}

func TestLockRejectsBadInput(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	var nilCtx context.Context
	for _, tc := range []struct {
		name string
		ctx  context.Context
		key  string
		ttl  time.Duration
		opts []redlock.LockOption
		want string
	}{
		{"empty key", bg(), "", time.Second, nil, "empty key"},
		{"zero ttl", bg(), "k", 0, nil, "ttl must be at least 1ms"},
		{"negative ttl", bg(), "k", -time.Second, nil, "ttl must be at least 1ms"},
		{"ttl eaten by drift", bg(), "k", 2 * time.Millisecond, nil, "no validity after drift"},
		{"nil context", nilCtx, "k", time.Second, nil, "nil context"},
		{"nil retry", bg(), "k", time.Second, []redlock.LockOption{redlock.WithRetry(nil)}, "nil retry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range []func(context.Context, string, time.Duration, ...redlock.LockOption) (*redlock.Lock, error){c.Lock, c.TryLock} {
				l, err := f(tc.ctx, tc.key, tc.ttl, tc.opts...)
				require.ErrorContains(t, err, tc.want)
				assert.Nil(t, l)
			}
		})
	}
	assert.Zero(t, fn.present(""), "nothing was written")
}

func TestNilReceivers(t *testing.T) {
	var l *redlock.Lock
	assert.Empty(t, l.Key())
	assert.Empty(t, l.Token())
	assert.True(t, l.Until().IsZero())
	require.ErrorContains(t, l.Extend(bg(), time.Second), "nil lock")
	require.ErrorContains(t, l.Unlock(bg()), "nil lock")
	var c *redlock.Client
	_, err := c.TryLock(bg(), "k", time.Second)
	require.ErrorContains(t, err, "nil client")

	var zero redlock.Lock
	require.ErrorContains(t, zero.Unlock(bg()), "nil lock")
}

func TestExtendRejectsBadTTL(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	require.ErrorContains(t, l.Extend(bg(), 0), "no validity")
	require.ErrorContains(t, l.Extend(bg(), time.Millisecond), "no validity")
	var nilCtx context.Context
	require.ErrorContains(t, l.Extend(nilCtx, time.Second), "nil context")
}

func TestFromURLRejectsGarbage(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"", "scheme must be redis or rediss"},
		{"localhost:6379", "scheme must be redis or rediss"},
		{"http://host:6379", "scheme must be redis or rediss"},
		{"redis://", "no host"},
		{"redis://host:6379/notanumber", "invalid database"},
		{"redis://user:s3cret@host:6379/1/2", "invalid URL path"},
		{"redis://user:s3cret@ho st:6379", "invalid URL"},
		{"redis://user:s3cret@host:6379?dial_timeout=zz", "dial_timeout"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			p, err := pool.FromURL(tc.url)
			require.ErrorContains(t, err, tc.want)
			assert.NotContains(t, err.Error(), "s3cret", "passwords never appear in errors")
			assert.Nil(t, p)
		})
	}
}

func TestFromURLAddrHasNoPassword(t *testing.T) {
	p, err := pool.FromURL("rediss://user:s3cret@example.invalid:6380/2")
	require.NoError(t, err)
	defer p.Close()
	assert.Equal(t, "example.invalid:6380", p.Addr())
}

func TestNilGoRedisClient(t *testing.T) {
	p := pool.New(nil)
	_, err := p.SetNX(bg(), "k", "v", time.Second)
	require.ErrorContains(t, err, "nil redis client")
	_, err = p.Eval(bg(), pool.NewScript("return 1"), nil)
	require.ErrorContains(t, err, "nil redis client")
	require.NoError(t, p.Close())
}

func TestSetNXRejectsNonPositiveTTL(t *testing.T) {
	fn := newFakeNodes(t, 1)
	for _, ttl := range []time.Duration{0, -time.Second} {
		ok, err := fn.pools[0].SetNX(bg(), "k", "v", ttl)
		require.ErrorContains(t, err, "positive ttl")
		assert.False(t, ok)
	}
	assert.False(t, fn.servers[0].Exists("k"), "no key without expiry")
}

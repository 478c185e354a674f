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
// with == would panic, so New must tell pools apart by Addr alone.
type valuePool struct {
	pool.Pool
	tags []string
}

// ptrPool is an adapter with pointer receivers: a nil *ptrPool in a Pool is
// not a nil interface value, and its Addr panics.
type ptrPool struct{ pool.Pool }

func TestNewRejectsBadInput(t *testing.T) {
	fn := newFakeNodes(t, 2)
	for _, tc := range []struct {
		name  string
		pools []pool.Pool
		opts  []redlock.Option
		want  string
	}{
		{"no pools", nil, nil, "no pools"},
		{"nil pool", []pool.Pool{fn.pools[0], nil}, nil, "pool 1 is nil"},
		{"nil adapter pointer", []pool.Pool{fn.pools[0], (*ptrPool)(nil)}, nil, "pool 1 is nil"},
		{"same pool twice", []pool.Pool{fn.pools[0], fn.pools[1], fn.pools[0]}, nil, "pools 0 and 2 have the same address " + fn.pools[0].Addr()},
		{"same address twice", []pool.Pool{fn.pools[1], valuePool{Pool: fn.pools[1]}}, nil, "pools 0 and 1 have the same address"},
		{"zero node timeout", fn.pools, []redlock.Option{redlock.WithNodeTimeout(0)}, "node timeout"},
		// The bound every Client keeps to, which a restarted node's
		// return waits out: said, with what to do.
		{"node timeout above the limit", fn.pools, []redlock.Option{redlock.WithNodeTimeout(redlock.NodeTimeoutLimit + time.Millisecond)},
			"node timeout 5.001s is above NodeTimeoutLimit (5s), the longest a counted vote may take, which a restarted node's return waits out (docs/safety.md): use at most 5s"},
		{"negative drift", fn.pools, []redlock.Option{redlock.WithDriftFactor(-1)}, "drift factor"},
		{"NaN drift", fn.pools, []redlock.Option{redlock.WithDriftFactor(math.NaN())}, "drift factor"},
		{"nil clock", fn.pools, []redlock.Option{redlock.WithTimeSource(nil)}, "nil clock"},
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
		{"zero ttl", bg(), "k", 0, nil, "ttl must be between 3ms and 1m0s, got 0s"},
		{"negative ttl", bg(), "k", -time.Second, nil, "ttl must be between 3ms and 1m0s, got -1s"},
		{"ttl eaten by drift", bg(), "k", 2 * time.Millisecond, nil, "ttl must be between 3ms and 1m0s, got 2ms"},
		// Redis keeps whole milliseconds: these are 2ms, which drift eats.
		{"ttl 2.1ms", bg(), "k", 2100 * time.Microsecond, nil, "ttl must be between 3ms and 1m0s, got 2.1ms"},
		{"ttl 2.99ms", bg(), "k", 2990 * time.Microsecond, nil, "ttl must be between 3ms and 1m0s, got 2.99ms"},
		{"ttl above the max TTL", bg(), "k", redlock.DefaultMaxTTL + time.Millisecond, nil,
			"ttl 1m0.001s is longer than this Client's max TTL 1m0s: give every Client of these nodes WithMaxTTL(1m0.001s) or more"},
		{"ttl above MaxTTL", bg(), "k", redlock.MaxTTL + time.Millisecond, nil, "ttl 24h0m0.001s is longer than 24h0m0s, the longest any Client allows"},
		{"largest duration", bg(), "k", math.MaxInt64, nil, "ttl 2562047h47m16.854775807s is longer than 24h0m0s"},
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

func TestTTLRangeEnds(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	for _, ttl := range []time.Duration{3 * time.Millisecond, 3999 * time.Microsecond} {
		c.WaitIdle() // the cleanup of a failed attempt runs in the background
		l, err := c.TryLock(bg(), "k", ttl)
		if err != nil {
			// 3ms leaves 0.97ms of validity: a loaded machine may use it
			// up, which is a refusal by the clock, not by the arguments.
			require.ErrorContains(t, err, "validity used up", "ttl %v", ttl)
			continue
		}
		_ = l.Unlock(bg()) // may have expired already
	}
	c.WaitIdle()
	l, err := c.TryLock(bg(), "k", redlock.DefaultMaxTTL)
	require.NoError(t, err)
	require.NoError(t, l.Extend(bg(), redlock.DefaultMaxTTL))
	require.ErrorContains(t, l.Extend(bg(), redlock.DefaultMaxTTL+time.Millisecond), "WithMaxTTL(1m0.001s)")
	require.NoError(t, l.Unlock(bg()))

	// WithMaxTTL raises the bound up to MaxTTL, no further.
	long := newClient(t, fn.pools, redlock.WithMaxTTL(redlock.MaxTTL))
	l, err = long.TryLock(bg(), "k", redlock.MaxTTL)
	require.NoError(t, err)
	require.NoError(t, l.Extend(bg(), redlock.MaxTTL))
	require.NoError(t, l.Unlock(bg()))
	for _, d := range []time.Duration{0, time.Millisecond - 1, redlock.MaxTTL + 1} {
		_, err = redlock.New(fn.pools, redlock.WithMaxTTL(d))
		require.ErrorContains(t, err, "max ttl must be between 1ms and 24h0m0s", "%v", d)
	}

	// A larger drift factor raises the minimum.
	c2 := newClient(t, fn.pools, redlock.WithDriftFactor(0.5))
	_, err = c2.TryLock(bg(), "k", 4*time.Millisecond)
	require.ErrorContains(t, err, "ttl must be between 5ms and 1m0s, got 4ms")
	_, err = redlock.New(fn.pools, redlock.WithDriftFactor(0.99999999))
	require.ErrorContains(t, err, "leaves no validity to any ttl up to 24h0m0s")
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
	_, err = c.Lock(bg(), "k", time.Second)
	require.ErrorContains(t, err, "nil client")
	require.ErrorContains(t, c.Do(bg(), "k", time.Second, func(context.Context) error { return nil }), "nil client")
	assert.Zero(t, c.Quorum())
	require.ErrorContains(t, c.Close(), "nil client")

	var zero redlock.Lock
	require.ErrorContains(t, zero.Unlock(bg()), "nil lock")
}

func TestExtendRejectsBadTTL(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	require.ErrorContains(t, l.Extend(bg(), 0), "ttl must be between 3ms and 1m0s, got 0s")
	require.ErrorContains(t, l.Extend(bg(), time.Millisecond), "ttl must be between 3ms and 1m0s, got 1ms")
	require.ErrorContains(t, l.Extend(bg(), 2500*time.Microsecond), "ttl must be between 3ms and 1m0s, got 2.5ms")
	require.ErrorContains(t, l.Extend(bg(), math.MaxInt64), "is longer than 24h0m0s")
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

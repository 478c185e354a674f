package rueidispool_test

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/internal/redistls"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/pool/conformance"
	"github.com/redlockgo/redlock/pool/rueidispool"
)

func bg() context.Context { return context.Background() }

// newClient returns a rueidis client for addr, closed when t ends.
func newClient(t *testing.T, addr string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func TestNewLeavesTheClientOpen(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	c := newClient(t, srv.Addr())
	p := rueidispool.New(c)
	assert.Equal(t, srv.Addr(), p.Addr())
	ok, err := p.SetNX(bg(), "k", "v", time.Minute)
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, p.Close())
	require.NoError(t, c.Do(bg(), c.B().Ping().Build()).Error(), "the caller's client stays open")
}

// wrapped is a rueidis.Client of the caller's own, as a tracing wrapper
// would be: its nil pointer panics on any method.
type wrapped struct{ rueidis.Client }

// TestNilClient checks that New of a nil client, untyped or a nil pointer,
// makes a Pool whose every call to the node fails with an error that says
// so, and that nothing panics.
func TestNilClient(t *testing.T) {
	tests := []struct {
		name   string
		client rueidis.Client
		addr   string
	}{
		{"Untyped", nil, "<nil client>"},
		{"NilPointer", (*wrapped)(nil), "<nil *rueidispool_test.wrapped>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p pool.Pool
			require.NotPanics(t, func() { p = rueidispool.New(tc.client) })
			assert.Equal(t, tc.addr, p.Addr())
			assert.False(t, p.(pool.Cluster).IsCluster(), "a nil client is no cluster")

			set, err := p.SetNX(bg(), "k", "v", time.Minute)
			require.ErrorContains(t, err, "rueidispool: nil rueidis client")
			assert.False(t, set)
			v, err := p.Eval(bg(), pool.NewScript("return 1"), nil)
			require.ErrorContains(t, err, "rueidispool: nil rueidis client")
			assert.Nil(t, v)
			l, err := p.(pool.Notifier).Listen(bg())
			require.ErrorContains(t, err, "rueidispool: nil rueidis client")
			assert.Nil(t, l)

			require.NoError(t, p.Close(), "nothing to release")
		})
	}
}

func TestRESP3RepliesLookLikeRESP2(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	p := rueidispool.New(newClient(t, srv.Addr())) // rueidis speaks RESP3 by default
	tests := []struct {
		name, src string
		want      any
	}{
		{"True", "redis.setresp(3); return true", int64(1)},
		{"False", "redis.setresp(3); return false", nil},
		{"Nested", "redis.setresp(3); return {1, true, 'x'}", []any{int64(1), int64(1), "x"}},
		{"Double", "redis.setresp(3); return {double = 1.5}", 1.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.Eval(bg(), pool.NewScript(tc.src), nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestInvalidArguments(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	p, err := rueidispool.FromURL(srv.URL())
	require.NoError(t, err)
	defer p.Close()

	_, err = p.SetNX(bg(), "k", "v", 0)
	require.ErrorContains(t, err, "ttl must be positive", "a key without TTL would never expire")
	_, err = p.Eval(bg(), pool.NewScript("return 1"), nil, struct{}{})
	require.ErrorContains(t, err, "cannot encode struct {}")

	ok, err := p.SetNX(bg(), "sub-ms", "v", 300*time.Microsecond)
	require.NoError(t, err)
	require.True(t, ok, "a TTL under 1ms is rounded up, not dropped")
}

func TestFromURLOptions(t *testing.T) {
	const user, pass = "alice", conformance.Secret
	acl := redistls.Start(t, redistls.Options{Users: []redistls.User{{Name: user, Password: pass}}})

	t.Run("CredentialsReplaceTheURLs", func(t *testing.T) {
		p, err := rueidispool.FromURL(acl.URL(user, "wrong"), rueidispool.WithCredentials(user, pass))
		require.NoError(t, err)
		defer p.Close()
		ok, err := p.SetNX(bg(), "cred", "v", time.Minute)
		require.NoError(t, err)
		assert.True(t, ok)
	})

	invalid := []struct {
		name, url string
		opts      []rueidispool.Option
		want      string
	}{
		{"TLSConfigWithPlainURL", acl.URL("", ""), []rueidispool.Option{rueidispool.WithTLSConfig(&tls.Config{})}, "needs a rediss:// URL"},
		{"NilTLSConfig", "rediss://127.0.0.1:1", []rueidispool.Option{rueidispool.WithTLSConfig(nil)}, "nil TLS config"},
		{"SeveralAddresses", "redis://:" + pass + "@127.0.0.1:1?addr=127.0.0.1:2", nil, "one node per Pool"},
		{"Sentinel", "redis://127.0.0.1:1?master_set=m", nil, "one node per Pool"},
		{"UnixSocket", "unix:///tmp/redis.sock", nil, "scheme must be redis or rediss"},
		{"NoHost", "redis://", nil, "no host"},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			p, err := rueidispool.FromURL(tc.url, tc.opts...)
			require.ErrorContains(t, err, tc.want)
			assert.Nil(t, p)
			assert.False(t, strings.Contains(err.Error(), pass), "error %q shows the password", err)
		})
	}
}

func TestFromURLWhileTheNodeIsDown(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	srv.Kill()
	start := time.Now()
	p, err := rueidispool.FromURL(srv.URL())
	require.NoError(t, err, "a node that is down does not fail the Pool")
	defer p.Close()
	assert.Less(t, time.Since(start), 2*time.Second, "FromURL does not wait for the node")
	_, err = p.SetNX(bg(), "k", "v", time.Minute)
	require.Error(t, err)

	srv.Restart(t)
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(bg(), time.Second)
		defer cancel()
		ok, err := p.SetNX(ctx, "k", "v", time.Minute)
		return err == nil && ok
	}, 10*time.Second, 20*time.Millisecond, "the Pool connects once the node is up")
}

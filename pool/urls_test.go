package pool_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redlockgo/redlock/internal/redistls"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/pool/conformance"
)

func TestFromURLs(t *testing.T) {
	const user = "alice"
	servers := redistls.StartN(t, 3, redistls.Options{Users: []redistls.User{{Name: user, Password: conformance.Secret}}})
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = s.URL("", "")
	}

	pools, err := pool.FromURLs(urls, pool.WithCredentials(user, conformance.Secret))
	require.NoError(t, err)
	require.Len(t, pools, len(servers))
	for i, p := range pools {
		assert.Equal(t, servers[i].Addr(), p.Addr(), "in the order of the URLs")
		ok, err := p.SetNX(context.Background(), "k", "v", time.Minute)
		require.NoError(t, err, "the options apply to every URL")
		assert.True(t, ok)
		require.NoError(t, p.Close())
	}
}

func TestFromURLsRefuses(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent()) // no client is left behind
	const secret = conformance.Secret
	tests := []struct {
		name string
		urls []string
		want string
	}{
		{"None", nil, "pool: no URLs"},
		{"Empty", []string{}, "pool: no URLs"},
		{"InvalidSecond", []string{"redis://h1", "redis://h2?pool_size=-1", "redis://h3"},
			`pool: invalid URL "redis://h2" (2 of 3): option pool_size: -1 is out of range`},
		{"Unparsable", []string{"redis://h1", "redis://:" + secret + "/x@h2"},
			`pool: invalid URL (2 of 2): "@" after the host`},
		{"Same", []string{"redis://h1", "redis://h1"},
			`pool: URL "redis://h1" (2 of 2) names the node of URL 1, h1:6379: one Pool per node`},
		{"DefaultPort", []string{"redis://h1:6379", "redis://h2", "redis://h1"}, "(3 of 3) names the node of URL 1"},
		{"LeadingZero", []string{"redis://h1:6379", "redis://h1:06379"}, "names the node of URL 1"},
		{"Case", []string{"redis://Node-1.example", "redis://node-1.EXAMPLE."}, "names the node of URL 1"},
		{"OtherDB", []string{"redis://h1/0", "redis://h1/1"}, "names the node of URL 1"},
		{"OtherUser", []string{"redis://a:" + secret + "@h1", "rediss://b:" + secret + "@h1:6379"}, "names the node of URL 1"},
		{"IPv6", []string{"redis://[::1]:7000", "redis://[0:0::1]:7000"}, "names the node of URL 1"},
		{"IPv4Mapped", []string{"redis://127.0.0.1", "redis://[::ffff:127.0.0.1]"}, "names the node of URL 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pools, err := pool.FromURLs(tc.urls, pool.WithDialer(refuse))
			require.ErrorContains(t, err, tc.want)
			assert.Nil(t, pools)
			assert.NotContains(t, err.Error(), secret)
		})
	}
}

func TestFromURLsDistinctNodes(t *testing.T) {
	urls := []string{"redis://h1", "redis://h1:6380", "redis://h2", "redis://127.0.0.1", "redis://[::1]"}
	pools, err := pool.FromURLs(urls, pool.WithDialer(refuse))
	require.NoError(t, err)
	require.Len(t, pools, len(urls))
	for _, p := range pools {
		require.NoError(t, p.Close())
	}
}

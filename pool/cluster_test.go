package pool_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/pool"
)

func TestFromURLCluster(t *testing.T) {
	for _, rawURL := range []string{
		"redis+cluster://h1:7000",
		"redis+cluster://h1:7000?addr=h2:7001&addr=h3:7002",
		"REDIS+CLUSTER://u:secret@h1?addr=h2:7001&dial_timeout=2s&pool_size=20",
		"rediss+cluster://h1:7000?addr=[::1]:7001&skip_verify=true",
	} {
		p, err := pool.FromURL(rawURL, pool.WithDialer(refuse))
		require.NoError(t, err, rawURL)
		c, ok := p.(pool.Cluster)
		require.True(t, ok && c.IsCluster(), "%s is a cluster", rawURL)
		assert.Contains(t, p.Addr(), "h1", rawURL)
		assert.NotContains(t, p.Addr(), "secret")
		require.NoError(t, p.Close())
	}
	p, err := pool.FromURL("redis://h1:7000", pool.WithDialer(refuse))
	require.NoError(t, err)
	assert.False(t, p.(pool.Cluster).IsCluster(), "a plain URL is one standalone node")
	require.NoError(t, p.Close())
}

func TestFromURLClusterRefuses(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"redis+cluster://:secret@h1:7000/1", "a cluster has no db"},
		{"redis+cluster://:secret@h1:7000?db=2", "a cluster has no db"},
		{"redis+cluster://:secret@h1:7000?addr=h1:7000", "given twice"},
		{"redis+cluster://:secret@h1:7000?addr=h2", "want host:port"},
		{"redis+cluster://:secret@h1:7000?addr=h2:0", `option addr: "h2:0": port out of range`},
		{"redis+cluster://:secret@127.0.0.1:7000:1", `more than one ":" in the host`},
		{"redis+cluster://:secret@127.0.0.1:7000?addr=127.0.0.1:7001:2", `option addr: "127.0.0.1:7001:2": more than one ":" in the host`},
		{"redis+cluster://:secret@127.0.0.1:7000?addr=::1:7001", `option addr: "::1:7001": more than one ":" in the host`},
		{"redis+cluster://:secret@:7000", "no host: a cluster URL names its first seed"},
		{"redis+cluster://:secret@127.0.0.1:7000?read_timeout=-1", `option read_timeout: "-1" is out of range`},
		{"redis+cluster://:secret@h1:7000?addr=u:p@h2:1", "percent-encode"},
		{"redis+cluster://:secret@h1:7000?max_retries=3", "never retries"},
		{"redis+cluster://:secret@h1:7000?bogus=1", "unknown option"},
		{"http+cluster://:secret@h1:7000", "scheme"},
		{"redis+cluster://:secret@", "no host"},
	} {
		_, err := pool.FromURL(tc.url, pool.WithDialer(refuse))
		require.Error(t, err, tc.url)
		assert.Contains(t, err.Error(), tc.want, tc.url)
		assert.NotContains(t, err.Error(), "secret", "errors never quote the password")
		assert.True(t, strings.HasPrefix(err.Error(), "pool: invalid"), err.Error())
	}
}

func TestFromURLsClusterSeedsAreNodes(t *testing.T) {
	_, err := pool.FromURLs([]string{"redis://h2:7001", "redis+cluster://h1:7000?addr=h2:7001"}, pool.WithDialer(refuse))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "names the node of URL 1")
	pools, err := pool.FromURLs([]string{"redis://h9:7001", "redis+cluster://h1:7000?addr=h2:7001"}, pool.WithDialer(refuse))
	require.NoError(t, err)
	for _, p := range pools {
		require.NoError(t, p.Close())
	}
}

package pool_test

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistls"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/pool/conformance"
)

func TestFromURLOptions(t *testing.T) {
	const user, pass = "alice", conformance.Secret
	acl := redistls.Start(t, redistls.Options{Users: []redistls.User{{Name: user, Password: pass}}})

	t.Run("CredentialsReplaceTheURLs", func(t *testing.T) {
		p, err := pool.FromURL(acl.URL(user, "wrong"), pool.WithCredentials(user, pass))
		require.NoError(t, err)
		defer p.Close()
		ok, err := p.SetNX(context.Background(), "cred", "v", time.Minute)
		require.NoError(t, err)
		assert.True(t, ok)
	})

	invalid := []struct {
		name, url string
		opts      []pool.URLOption
		want      string
	}{
		{"TLSConfigWithPlainURL", acl.URL("", ""), []pool.URLOption{pool.WithTLSConfig(&tls.Config{})}, "needs a rediss:// URL"},
		{"NilTLSConfig", "rediss://127.0.0.1:1", []pool.URLOption{pool.WithTLSConfig(nil)}, "nil TLS config"},
		{"Scheme", "http://" + user + ":" + pass + "@127.0.0.1:1", nil, "scheme must be redis or rediss"},
		{"NoHost", "redis://", nil, "no host"},
		{"BadPort", "redis://" + user + ":" + pass + "@127.0.0.1:x", nil, "invalid URL"},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			p, err := pool.FromURL(tc.url, tc.opts...)
			require.ErrorContains(t, err, tc.want)
			assert.Nil(t, p)
			assert.False(t, strings.Contains(err.Error(), pass), "error %q shows the password", err)
		})
	}
}

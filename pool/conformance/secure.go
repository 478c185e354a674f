package conformance

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistls"
	"github.com/redlockgo/redlock/redlock"
)

// secureNodes starts n redis-servers that speak only TLS, with a certificate
// from a CA made for the test, and require the suite's ACL user.
func secureNodes(t *testing.T, n int) (*redistls.CA, []*redistls.Server) {
	t.Helper()
	ca := redistls.NewCA(t)
	return ca, redistls.StartN(t, n, redistls.Options{CA: ca, Users: []redistls.User{{Name: user, Password: Secret}}})
}

func urls(servers []*redistls.Server, user, password string) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.URL(user, password)
	}
	return out
}

func (s *suite) testTLS(t *testing.T) {
	ca, servers := secureNodes(t, 3)
	c := ctx(t)

	t.Run("LockUnlock", func(t *testing.T) {
		pools := s.openAll(t, urls(servers, user, Secret), ca.ClientConfig())
		for i, p := range pools {
			assert.Equal(t, servers[i].Addr(), p.Addr())
		}
		a := newClient(t, pools)
		b := newClient(t, pools)
		l, err := a.TryLock(c, "tls", time.Minute)
		require.NoError(t, err)
		_, err = b.TryLock(c, "tls", time.Minute)
		require.ErrorIs(t, err, redlock.ErrTaken)
		require.NoError(t, l.Extend(c, time.Minute))
		require.NoError(t, l.Unlock(c))
		// Unlock returns at the majority, and b's refused attempt is
		// cleaned up in the background (a new TLS connection can outlast
		// its contended grace): the key is free for b once both are done.
		require.Eventually(t, func() bool {
			l, err = b.TryLock(c, "tls", time.Minute)
			return err == nil
		}, 5*time.Second, 20*time.Millisecond, "free again after Unlock")
		require.NoError(t, l.Unlock(c))
	})

	t.Run("UntrustedCertificateFails", func(t *testing.T) {
		// Without the CA, the system's roots cannot verify the server.
		p := s.open(t, servers[0].URL(user, Secret), nil)
		_, err := p.SetNX(c, "tls:untrusted", "v", time.Minute)
		require.Error(t, err)
		assert.NotContains(t, err.Error(), Secret)
	})
}

func (s *suite) testSecrets(t *testing.T) {
	ca, servers := secureNodes(t, 3)
	c := ctx(t)

	// Nodes 0 and 1 accept the password; node 2 refuses it.
	wrong := "not-" + Secret
	nodeURLs := urls(servers, user, Secret)
	nodeURLs[2] = servers[2].URL(user, wrong)
	pools := s.openAll(t, nodeURLs, ca.ClientConfig())
	for _, p := range pools {
		assert.NotContains(t, p.Addr(), Secret)
	}

	var mu sync.Mutex
	var buf bytes.Buffer
	h := slog.NewTextHandler(&lockedWriter{mu: &mu, w: &buf}, &slog.HandlerOptions{Level: slog.LevelDebug})
	cl := newClient(t, pools, redlock.WithLogger(slog.New(h)))

	noSecret := func(t *testing.T, err error) {
		t.Helper()
		require.Error(t, err)
		assert.NotContains(t, err.Error(), Secret, "errors never show the password")
		var ne *redlock.NodeError
		assert.ErrorAs(t, err, &ne, "the error names the failing nodes")
	}

	l, err := cl.TryLock(c, "secret", time.Minute)
	require.NoError(t, err, "2 of 3 nodes log in: a majority")
	servers[1].Kill() // now unreachable
	noSecret(t, l.Extend(c, time.Minute))
	noSecret(t, l.Unlock(c))
	_, err = cl.TryLock(c, "secret2", time.Minute)
	noSecret(t, err)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.NoError(t, cl.Close()) // no more log lines

	mu.Lock()
	out := buf.String()
	mu.Unlock()
	for _, kind := range []string{"extend_failed", "release_failed", "not_obtained"} {
		assert.Contains(t, out, kind, "the failure was logged")
	}
	assert.NotContains(t, out, Secret, "logs never show the password")
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

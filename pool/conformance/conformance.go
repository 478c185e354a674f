// Package conformance is the test suite every client adapter of pool.Pool
// must pass, run on real redis-server processes: SetNX and Eval's contract,
// context deadlines against a silent node, credentials, TLS and ACL logins,
// the lock end to end, the node's identity (pool.Identifier) and the restart
// quarantine over it, and, for a pool.Notifier, release notifications.
//
// An adapter's test calls [Run] with a function that builds its Pool from a
// URL:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, func(rawURL string, cfg *tls.Config) (pool.Pool, error) {
//			if cfg == nil {
//				return pool.FromURL(rawURL)
//			}
//			return pool.FromURL(rawURL, pool.WithTLSConfig(cfg))
//		})
//	}
//
// Without redis-server the suite fails, or is skipped when
// REDLOCK_SKIP_REDIS=1 (outside CI).
package conformance

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/redlockgo/redlock/pool"
)

// NewPool returns a Pool for the node at rawURL: redis:// or rediss://, with
// or without user and password. tlsConfig is nil for redis:// URLs and for
// rediss:// URLs that must use the system's roots; otherwise it trusts the
// suite's CA and must be used for the connection. The suite closes every Pool
// it gets.
//
// NewPool may fail only on an invalid URL: a node that is down, slow, or
// refuses the credentials must yield a Pool whose calls fail, as a lock must
// start with a minority of its nodes unavailable.
type NewPool func(rawURL string, tlsConfig *tls.Config) (pool.Pool, error)

// Secret is the password of the ACL user the suite logs in with. Every error
// and log line is checked not to contain it.
const Secret = "s3cret-Zq7"

// user is the ACL user the suite creates on the nodes that require a login.
const user = "alice"

// Run runs the suite as subtests of t. It also checks that no goroutine
// started during the suite outlives it once its pools are closed.
func Run(t *testing.T, newPool NewPool) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // registered first, so it runs last
	s := &suite{newPool: newPool}
	t.Run("SetNX", s.testSetNX)
	t.Run("Eval", s.testEval)
	t.Run("NoScript", s.testNoScript)
	t.Run("Deadline", s.testDeadline)
	t.Run("Addr", s.testAddr)
	t.Run("Redlock", s.testRedlock)
	t.Run("TLS", s.testTLS)
	t.Run("Secrets", s.testSecrets)
	t.Run("MalformedURLs", s.testMalformedURLs)
	t.Run("Notifier", s.testNotifier)
	t.Run("Identity", s.testIdentity)
	t.Run("Restart", s.testRestart)
}

type suite struct {
	newPool NewPool
}

// open returns the adapter's Pool for rawURL, closed when t ends.
func (s *suite) open(t *testing.T, rawURL string, cfg *tls.Config) pool.Pool {
	t.Helper()
	p, err := s.newPool(rawURL, cfg)
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	if p == nil {
		t.Fatal("NewPool returned a nil Pool and no error")
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

// ctx returns a context that ends with t, with a deadline generous enough
// for a loaded machine: calls on a healthy node never reach it.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

package pool_test

import (
	"crypto/tls"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/pool/conformance"
)

// TestConformance runs the adapter suite over the go-redis adapter.
func TestConformance(t *testing.T) {
	conformance.Run(t, func(rawURL string, cfg *tls.Config) (pool.Pool, error) {
		if cfg == nil {
			return pool.FromURL(rawURL)
		}
		return pool.FromURL(rawURL, pool.WithTLSConfig(cfg))
	})
}

// TestRestartOverUsersClients runs the restart case over Pools made by New
// over go-redis clients of the caller's, which tell the lock nothing of
// their servers (no pool.Identifier): the quarantine covers them all the
// same. The second kind is a Pool the caller wrote around one.
func TestRestartOverUsersClients(t *testing.T) {
	open := func(rawURL string, _ *tls.Config) (pool.Pool, error) {
		opts, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, err
		}
		rc := redis.NewClient(opts)
		return closing{pool.New(rc), rc}, nil
	}
	t.Run("New", func(t *testing.T) { conformance.RunRestart(t, open) })
	t.Run("OwnPool", func(t *testing.T) {
		conformance.RunRestart(t, func(rawURL string, cfg *tls.Config) (pool.Pool, error) {
			p, err := open(rawURL, cfg)
			return ownPool{p}, err
		})
	})
}

// ownPool is a Pool a user wrote around another: Pool's methods only.
type ownPool struct{ pool.Pool }

// closing is New's Pool, closing on Close the client the test made for it.
type closing struct {
	pool.Pool
	rc *redis.Client
}

func (c closing) Close() error { return c.rc.Close() }

package pool_test

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/pool/conformance"
	"github.com/redlockgo/redlock/redlock"
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
// over go-redis clients of the caller's: a client New's dial hook reads
// from its first connection; one used before New, whose first connection
// the hook never read (the lock reads the identity through its scripts
// until the client settles); and a Pool the caller wrote around one, which
// tells the lock nothing of its server (no pool.Identifier).
func TestRestartOverUsersClients(t *testing.T) {
	open := func(rawURL string, _ *tls.Config) (pool.Pool, error) {
		opts, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, err
		}
		rc := redis.NewClient(opts)
		t.Cleanup(func() { _ = rc.Close() })
		return pool.New(rc), nil
	}
	t.Run("New", func(t *testing.T) { conformance.RunRestart(t, open) })
	t.Run("NewOverUsedClient", func(t *testing.T) {
		conformance.RunRestart(t, func(rawURL string, _ *tls.Config) (pool.Pool, error) {
			opts, err := redis.ParseURL(rawURL)
			if err != nil {
				return nil, err
			}
			rc := redis.NewClient(opts)
			t.Cleanup(func() { _ = rc.Close() })
			err = rc.Ping(t.Context()).Err() // a connection New's hook never sees
			return pool.New(rc), err
		})
	})
	t.Run("OwnPool", func(t *testing.T) {
		conformance.RunRestart(t, func(rawURL string, cfg *tls.Config) (pool.Pool, error) {
			p, err := open(rawURL, cfg)
			return ownPool{p}, err
		})
	})
}

// ownPool is a Pool a user wrote around another: Pool's methods only.
type ownPool struct{ pool.Pool }

// TestYoungClusterMastersDoNotCountOverUsersClusterClient: a Pool made by
// New over a *redis.ClusterClient of the caller's is judged by the shard
// check as FromURL's cluster Pool is: on three clusters formed as
// redis-cli forms them (no declaration, no persistence), whose masters
// have just started and may have lost what an earlier run granted, no
// acquisition counts a yes of theirs, and the refusal names the
// quarantine.
func TestYoungClusterMastersDoNotCountOverUsersClusterClient(t *testing.T) {
	clusters := redistest.StartCLIClusters(t, 3, 3, 0, redistest.NoPersistence)
	pools := make([]pool.Pool, len(clusters))
	for i, c := range clusters {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ContextTimeoutEnabled: true, MaxRetries: -1})
		t.Cleanup(func() { _ = cc.Close() })
		pools[i] = pool.New(cc)
	}
	c, err := redlock.New(pools, redlock.WithNodeTimeout(3*time.Second), redlock.WithQuarantine(time.Hour))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.TryLock(t.Context(), "orders:42", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained, "young masters counted")
	require.ErrorIs(t, err, redlock.ErrNodeQuarantined)
}

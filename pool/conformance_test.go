package pool_test

import (
	"crypto/tls"
	"testing"

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

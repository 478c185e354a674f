package rueidispool_test

import (
	"crypto/tls"
	"testing"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/pool/conformance"
	"github.com/redlockgo/redlock/pool/rueidispool"
)

// TestConformance runs the adapter suite over the rueidis adapter.
func TestConformance(t *testing.T) {
	conformance.Run(t, func(rawURL string, cfg *tls.Config) (pool.Pool, error) {
		if cfg == nil {
			return rueidispool.FromURL(rawURL)
		}
		return rueidispool.FromURL(rawURL, rueidispool.WithTLSConfig(cfg))
	})
}

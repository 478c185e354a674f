package pool

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"

	"github.com/redis/go-redis/v9"
)

// URLOption completes or overrides what a URL says, for [FromURL].
type URLOption func(*urlConfig)

type urlConfig struct {
	tls          *tls.Config
	user, pass   string
	credentials  bool
	nilTLSConfig bool
}

// WithTLSConfig sets the TLS configuration of a rediss:// URL, in place of
// the default one, which trusts the system's roots. Use it for a private CA,
// client certificates, or a pinned server name. The configuration is cloned;
// an empty ServerName is set to the URL's host. Given with a redis:// URL it
// is an error, rather than a silently unencrypted connection.
func WithTLSConfig(cfg *tls.Config) URLOption {
	return func(c *urlConfig) {
		if cfg == nil {
			c.nilTLSConfig = true
			return
		}
		c.tls = cfg.Clone()
	}
}

// WithCredentials sets the ACL username and password, replacing any in the
// URL, so that the password need not be written into a URL. An empty
// username logs in as the default user (AUTH password).
func WithCredentials(username, password string) URLOption {
	return func(c *urlConfig) {
		c.user, c.pass, c.credentials = username, password, true
	}
}

// fromURL is FromURL.
func fromURL(rawURL string, opts []URLOption) (Pool, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error repeats the whole URL, password included: keep only its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("pool: invalid URL: %w", err)
	}
	safe := u.Redacted()
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("pool: invalid URL %q: scheme must be redis or rediss", safe)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("pool: invalid URL %q: no host", safe)
	}
	var cfg urlConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	switch {
	case cfg.nilTLSConfig:
		return nil, fmt.Errorf("pool: invalid URL %q: nil TLS config", safe)
	case cfg.tls != nil && u.Scheme != "rediss":
		return nil, fmt.Errorf("pool: invalid URL %q: a TLS config needs a rediss:// URL", safe)
	}
	ropts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("pool: invalid URL %q: %w", safe, err)
	}
	ropts.ContextTimeoutEnabled = true
	ropts.MaxRetries = -1
	ropts.DialerRetries = 1 // a dead node should fail at once, not after backoff
	if cfg.tls != nil {
		if cfg.tls.ServerName == "" {
			cfg.tls.ServerName = u.Hostname()
		}
		ropts.TLSConfig = cfg.tls
	}
	if cfg.credentials {
		ropts.Username, ropts.Password = cfg.user, cfg.pass
	}
	return newGoRedis(redis.NewClient(ropts), true), nil
}

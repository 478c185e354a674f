package pool

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/pool/internal/redisurl"
)

// URLOption completes or overrides what a URL says, for [FromURL].
type URLOption func(*urlConfig)

type urlConfig struct {
	tls          *tls.Config
	user, pass   string
	credentials  bool
	nilTLSConfig bool
	dialer       func(ctx context.Context, network, addr string) (net.Conn, error) // for tests
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
	if _, ok := clusterScheme(rawURL); ok {
		copts, safe, err := parseClusterURL(rawURL, opts)
		switch {
		case err != nil && safe == "":
			return nil, fmt.Errorf("pool: invalid cluster URL: %w", err)
		case err != nil:
			return nil, fmt.Errorf("pool: invalid cluster URL %q: %w", safe, err)
		}
		return newGoRedis(redis.NewClusterClient(copts), true), nil
	}
	ropts, safe, err := parseURL(rawURL, opts)
	switch {
	case err != nil && safe == "":
		return nil, fmt.Errorf("pool: invalid URL: %w", err)
	case err != nil:
		return nil, fmt.Errorf("pool: invalid URL %q: %w", safe, err)
	}
	return newIdentified(ropts), nil
}

// parseURL returns the go-redis options for rawURL and opts, and rawURL
// without its userinfo and query, where a secret may be, for messages; or
// "" when rawURL does not parse.
func parseURL(rawURL string, opts []URLOption) (*redis.Options, string, error) {
	u, err := redisurl.Parse(rawURL)
	if err != nil {
		return nil, "", err
	}
	safe := redisurl.Redacted(u)
	ropts, err := goRedisOptions(u, rawURL, opts)
	return ropts, safe, err
}

// goRedisOptions returns the go-redis options for rawURL, parsed as u, and
// opts.
func goRedisOptions(u *url.URL, rawURL string, opts []URLOption) (*redis.Options, error) {
	var cfg urlConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	switch {
	case cfg.nilTLSConfig:
		return nil, errors.New("nil TLS config")
	case cfg.tls != nil && u.Scheme != "rediss":
		return nil, errors.New("a TLS config needs a rediss:// URL")
	}
	if err := checkQuery(u, cfg.tls != nil); err != nil {
		return nil, err
	}
	ropts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, err // not expected once checkQuery passed; it quotes no userinfo
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
	if cfg.dialer != nil {
		ropts.Dialer = cfg.dialer
	}
	return ropts, nil
}

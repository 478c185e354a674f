package rueidispool

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync/atomic"

	"github.com/redis/rueidis"

	"github.com/redlockgo/redlock/pool"
)

// Option completes or overrides what the URL given to [FromURL] says.
type Option func(*config)

type config struct {
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
func WithTLSConfig(cfg *tls.Config) Option {
	return func(c *config) {
		if cfg == nil {
			c.nilTLSConfig = true
			return
		}
		c.tls = cfg.Clone()
	}
}

// WithCredentials sets the ACL username and password, replacing any in the
// URL, so that the password need not be written into a URL. An empty
// username logs in as the default user.
func WithCredentials(username, password string) Option {
	return func(c *config) {
		c.user, c.pass, c.credentials = username, password, true
	}
}

// FromURL returns a Pool for the one node at rawURL, which has the form
//
//	redis://[[user]:password@]host[:port][/db][?option=value...]
//	rediss://...   (the same over TLS)
//
// with the query options rueidis.ParseURL understands (dial_timeout,
// write_timeout, protocol, client_name, skip_verify), then opts applied in
// order. A URL naming more than one address (addr=) or a sentinel master set
// (master_set=) is an error: a Pool is one independent node.
//
// The client it creates talks to that node only (no cluster discovery),
// never resends a command, and does not cache; see the package comment for
// auto-pipelining. It connects on first use, not here, bounded by that call's
// context: a node that is down, hung or refuses the credentials fails each
// call, so that a lock can start with a minority of its nodes unavailable.
// Close on the returned Pool closes the client.
//
// Errors never contain the password.
func FromURL(rawURL string, opts ...Option) (pool.Pool, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error repeats the whole URL, password included: keep only its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("rueidispool: invalid URL: %w", err)
	}
	safe := u.Redacted()
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("rueidispool: invalid URL %q: scheme must be redis or rediss", safe)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("rueidispool: invalid URL %q: no host", safe)
	}
	if q := u.Query(); q.Has("addr") || q.Has("master_set") {
		return nil, fmt.Errorf("rueidispool: invalid URL %q: one node per Pool (no addr or master_set)", safe)
	}
	var cfg config
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	switch {
	case cfg.nilTLSConfig:
		return nil, fmt.Errorf("rueidispool: invalid URL %q: nil TLS config", safe)
	case cfg.tls != nil && u.Scheme != "rediss":
		return nil, fmt.Errorf("rueidispool: invalid URL %q: a TLS config needs a rediss:// URL", safe)
	}
	o, err := rueidis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("rueidispool: invalid URL %q: %w", safe, err)
	}
	if cfg.tls != nil {
		if cfg.tls.ServerName == "" {
			cfg.tls.ServerName = u.Hostname()
		}
		o.TLSConfig = cfg.tls
	}
	if cfg.credentials {
		o.Username, o.Password = cfg.user, cfg.pass
	}
	o.ForceSingleClient = true // one node: no CLUSTER SLOTS probe
	o.DisableCache = true      // the lock never reads through a cache
	o.DisableRetry = true      // the lock decides what to retry

	// rueidis dials in NewClient, with no context: a hung node would block
	// here for the dial timeout, and a node that is down would fail the whole
	// Pool. The first dial is refused at once instead; with ForceSingleClient
	// rueidis still returns the client, which dials again on first use with
	// that call's context.
	var ready atomic.Bool
	dial := o.DialCtxFn
	if dial == nil {
		dial = dialContext
	}
	o.DialCtxFn = func(ctx context.Context, addr string, d *net.Dialer, t *tls.Config) (net.Conn, error) {
		if !ready.Load() {
			return nil, errDeferred
		}
		return dial(ctx, addr, d, t)
	}
	client, err := rueidis.NewClient(o)
	ready.Store(true)
	if client == nil {
		return nil, fmt.Errorf("rueidispool: %q: %w", safe, err)
	}
	return &adapter{client: client, addr: o.InitAddress[0], owned: true}, nil
}

// errDeferred refuses the dial made inside rueidis.NewClient.
var errDeferred = errors.New("rueidispool: connect on first use")

// dialContext is rueidis's own dial for TCP and TLS.
func dialContext(ctx context.Context, addr string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
	if cfg != nil {
		td := tls.Dialer{NetDialer: d, Config: cfg}
		return td.DialContext(ctx, "tcp", addr)
	}
	return d.DialContext(ctx, "tcp", addr)
}

package rueidispool

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/pool/internal/redisurl"
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

// FromURL returns a Pool for the one standalone node at rawURL, with opts
// applied in order:
//
//	redis://[[user]:password@]host[:port][/db][?option=value...]
//	rediss://...   (the same over TLS)
//
// In the user name and password, "/", "?", "#" and "@" must be
// percent-encoded, or given with WithCredentials. The query takes db,
// dial_timeout, write_timeout, protocol, client_name, skip_verify,
// max_retries (0 or -1) and client_cache (0), each at most once; any other
// option (addr= and master_set= included), or a value out of bounds, is an
// error naming the option. Errors never contain the user name or password.
//
// The client it creates talks to that node only, never resends a command,
// does not cache, and connects on first use, bounded by that call's
// context; Close on the Pool closes it. The Pool is a pool.Identifier: each
// new connection reads the server's identity (pool.ReadIdentity) before any
// command of the lock's runs on it.
func FromURL(rawURL string, opts ...Option) (pool.Pool, error) {
	u, err := redisurl.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("rueidispool: invalid URL: %w", err)
	}
	safe := redisurl.Redacted(u) // no userinfo nor query, where a secret may be
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
	if err := checkQuery(u, cfg.tls != nil); err != nil {
		return nil, fmt.Errorf("rueidispool: invalid URL %q: %w", safe, err)
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
	//
	// Every connection then reads the server's identity before rueidis's
	// handshake (identity.go), so that the lock's restart quarantine can
	// judge the node.
	var ready atomic.Bool
	dial := o.DialCtxFn
	if dial == nil {
		dial = dialContext
	}
	ident := &identity{}
	identify := ident.dialer(dial, login{user: o.Username, password: o.Password, db: o.SelectDB})
	o.DialCtxFn = func(ctx context.Context, addr string, d *net.Dialer, t *tls.Config) (net.Conn, error) {
		if !ready.Load() {
			return nil, errDeferred
		}
		return identify(ctx, addr, d, t)
	}
	client, err := rueidis.NewClient(o)
	ready.Store(true)
	if client == nil {
		return nil, fmt.Errorf("rueidispool: %q: %w", safe, err)
	}
	return &identified{adapter: &adapter{client: client, addr: o.InitAddress[0], owned: true}, identity: ident}, nil
}

// queryOptions are the options rueidis.ParseURL reads, but for addr and
// master_set.
var queryOptions = []string{
	"db", "dial_timeout", "write_timeout", "protocol", "client_name", "skip_verify", "max_retries", "client_cache",
}

// checkQuery refuses the query options of u that rueidis would misread or
// silently ignore, or that FromURL overrides. ownTLS tells that
// WithTLSConfig replaces the TLS configuration the URL sets up.
func checkQuery(u *url.URL, ownTLS bool) error {
	if q := u.Query(); q.Has("addr") || q.Has("master_set") {
		return errors.New("one node per Pool (no addr or master_set)")
	}
	q, err := redisurl.ParseQuery(u, queryOptions...)
	if err != nil {
		return err
	}
	for _, name := range queryOptions {
		// rueidis reads some empty values as errors, skip_verify= as true.
		if s, ok := q.Raw(name); ok && s == "" {
			q.Fail(name, errors.New("empty value"))
		}
	}
	q.DB(u)
	for _, name := range []string{"dial_timeout", "write_timeout"} {
		// rueidis fails every dial, or write, at once on a negative timeout.
		q.Duration(name, redisurl.GoDuration, time.Millisecond, 10*time.Minute, false, 0)
	}
	q.OneOf("protocol", "2", "3")
	q.ClientName("client_name")
	if s, _ := q.Raw("max_retries"); s != "" && s != "0" && s != "-1" {
		q.Fail("max_retries", fmt.Errorf("%s: want 0 or -1, as the client never resends a command", redisurl.Quote(s)))
	}
	if s, _ := q.Raw("client_cache"); s != "" && s != "0" {
		q.Fail("client_cache", fmt.Errorf("%s: want 0, as the client never caches", redisurl.Quote(s)))
	}
	if _, ok := q.Raw("skip_verify"); ok {
		switch {
		case u.Scheme != "rediss":
			q.Fail("skip_verify", errors.New("needs a rediss:// URL"))
		case ownTLS:
			q.Fail("skip_verify", errors.New("WithTLSConfig replaces it: set InsecureSkipVerify in that config"))
		}
		q.Bool("skip_verify", false)
	}
	return q.Err()
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

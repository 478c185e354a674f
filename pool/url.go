package pool

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/redis/go-redis/v9"
)

// FromURL returns a Pool for the node at rawURL, which has the form
//
//	redis://[[user]:password@]host[:port][/db][?option=value...]
//	rediss://...   (the same over TLS)
//
// with the query options go-redis understands (dial_timeout, pool_size, ...).
// The client it creates honours context deadlines on every call and never
// resends a command or redials by itself: the lock decides what to retry. Close on the
// returned Pool closes that client.
//
// Errors never contain the password.
func FromURL(rawURL string) (Pool, error) {
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
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("pool: invalid URL %q: %w", safe, err)
	}
	opts.ContextTimeoutEnabled = true
	opts.MaxRetries = -1
	opts.DialerRetries = 1 // a dead node should fail at once, not after backoff
	return newGoRedis(redis.NewClient(opts), true), nil
}

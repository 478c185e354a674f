package pool

import (
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"time"

	"github.com/redlockgo/redlock/pool/internal/redisurl"
)

// The bounds of the query options FromURL takes. go-redis checks none of
// them: pool_size=-1 panics inside it and pool_size=100000000 allocates
// until the process dies, and a number of seconds past 292 years wraps
// around to any duration.
const (
	maxConns   = 10_000           // pool_size, *_conns, pipeline_pool_size
	maxTimeout = 10 * time.Minute // dial, read, write and pool timeouts
	maxConnAge = 24 * time.Hour   // conn_max_idle_time, conn_max_lifetime
	minBuffer  = 1 << 10          // pipeline_*_buffer_size, bytes
	maxBuffer  = 1 << 20
)

// queryOptions are the options go-redis's ParseURL reads.
var queryOptions = []string{
	"db", "protocol", "client_name", "max_retries", "min_retry_backoff", "max_retry_backoff",
	"dial_timeout", "read_timeout", "write_timeout", "pool_fifo", "pool_size", "pool_timeout",
	"min_idle_conns", "max_idle_conns", "max_active_conns", "max_concurrent_dials",
	"pipeline_pool_size", "pipeline_read_buffer_size", "pipeline_write_buffer_size",
	"conn_max_idle_time", "idle_timeout", "conn_max_lifetime", "max_conn_age",
	"conn_max_lifetime_jitter", "skip_verify",
}

// errNoRetries refuses the retry options: FromURL sets MaxRetries to -1.
var errNoRetries = errors.New("FromURL never retries (the lock decides what to retry)")

// checkQuery refuses the query options of u that go-redis would take the
// process down with, or misread, or that FromURL would override. ownTLS
// tells that WithTLSConfig replaces the TLS configuration the URL sets up.
func checkQuery(u *url.URL, ownTLS bool) error {
	q, err := redisurl.ParseQuery(u, queryOptions...)
	if err != nil {
		return err
	}
	q.DB(u)
	q.OneOf("protocol", "2", "3")
	q.ClientName("client_name")
	if s, _ := q.Raw("max_retries"); s != "" && s != "0" && s != "-1" {
		q.Fail("max_retries", fmt.Errorf("%s: want 0 or -1, as %w", redisurl.Quote(s), errNoRetries))
	}
	for _, name := range []string{"min_retry_backoff", "max_retry_backoff"} {
		if q.Has(name) {
			q.Fail(name, errNoRetries)
		}
	}
	q.Bool("pool_fifo", false)
	checkTimeouts(q)
	checkConns(q)
	checkConnAge(q)
	if q.Has("skip_verify") {
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

// checkTimeouts checks the timeouts. A dial or pool timeout of zero or less
// would fail every dial or every wait for a connection at once; a read or
// write timeout of zero means none, the call's context only. A negative one
// is refused: go-redis's URL parser reads it as none too, where its Options
// read -2 as "never set a socket deadline".
func checkTimeouts(q *redisurl.Query) {
	const syntax, lo = redisurl.GoDurationOrSeconds, time.Millisecond
	q.Duration("dial_timeout", syntax, lo, maxTimeout, false, 0)
	q.Duration("read_timeout", syntax, lo, maxTimeout, true, 0)
	q.Duration("write_timeout", syntax, lo, maxTimeout, true, 0)
	q.Duration("pool_timeout", syntax, lo, maxTimeout, false, 0)
}

// checkConns checks the connection counts and buffer sizes, each of which
// go-redis allocates for up front or per connection. An explicit 0, which
// go-redis reads as its default, is refused where it is out of range:
// leave the option out for the default.
func checkConns(q *redisurl.Query) {
	size := q.Int("pool_size", 1, maxConns, 10*runtime.GOMAXPROCS(0)) // go-redis's default
	minIdle := q.Int("min_idle_conns", 0, size, 0)
	if maxIdle := q.Int("max_idle_conns", 0, maxConns, 0); maxIdle > 0 && minIdle > maxIdle {
		q.Fail("min_idle_conns", fmt.Errorf("%d is more than max_idle_conns (%d)", minIdle, maxIdle))
	}
	if maxActive := q.Int("max_active_conns", 0, maxConns, 0); maxActive > 0 && minIdle > maxActive {
		q.Fail("min_idle_conns", fmt.Errorf("%d is more than max_active_conns (%d)", minIdle, maxActive))
	}
	q.Int("max_concurrent_dials", 1, size, 0)
	if q.Int("pipeline_pool_size", -1, maxConns, 1) == 0 {
		q.Fail("pipeline_pool_size", fmt.Errorf("0: want -1 (none) or 1 to %d", maxConns))
	}
	q.Int("pipeline_read_buffer_size", minBuffer, maxBuffer, 0)
	q.Int("pipeline_write_buffer_size", minBuffer, maxBuffer, 0)
}

// checkConnAge checks how long a connection may live or idle, where zero
// means no limit, and the jitter go-redis would cut to the lifetime. A
// jitter is checked against the lifetime only when both are in range, so
// that an error names the option at fault.
func checkConnAge(q *redisurl.Query) {
	const syntax, lo = redisurl.GoDurationOrSeconds, time.Millisecond
	q.Duration(alias(q, "conn_max_idle_time", "idle_timeout"), syntax, lo, maxConnAge, true, 0)
	lifeName := alias(q, "conn_max_lifetime", "max_conn_age")
	life := q.Duration(lifeName, syntax, lo, maxConnAge, true, 0) // 0 when absent, None when 0
	jitter := q.Duration("conn_max_lifetime_jitter", syntax, lo, maxConnAge, true, 0)
	switch {
	case q.Err() != nil || jitter <= 0: // absent, none, or refused above
	case life <= 0:
		q.Fail("conn_max_lifetime_jitter", fmt.Errorf("needs %s (1ms or more)", lifeName))
	case jitter > life:
		q.Fail("conn_max_lifetime_jitter", fmt.Errorf("%v is more than %s (%v)", jitter, lifeName, life))
	}
}

// alias returns the name of the option given, name or its old name, and
// refuses both.
func alias(q *redisurl.Query, name, old string) string {
	if !q.Has(old) {
		return name
	}
	if q.Has(name) {
		q.Fail(old, fmt.Errorf("the old name of %s, also given", name))
	}
	return old
}

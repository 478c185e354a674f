package pool_test

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/pool"
)

// refuse is a dialer that fails at once, so that clients made in tests
// never touch the network.
func refuse(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("test: no dialing")
}

// fromURL is pool.FromURL with the refusing dialer; it closes the Pool.
func fromURL(t *testing.T, rawURL string, opts ...pool.URLOption) error {
	t.Helper()
	p, err := pool.FromURL(rawURL, append(opts, pool.WithDialer(refuse))...)
	if err != nil {
		assert.Nil(t, p)
		return err
	}
	require.NotNil(t, p)
	require.NoError(t, p.Close())
	return nil
}

func TestFromURLQueryBounds(t *testing.T) {
	valid := []string{
		"", "?", "/", "/0", "/15", "?db=3", "?db=", "?pool_size=", "/2147483646",
		"?protocol=2", "?protocol=3", "?client_name=lock-1", "?max_retries=0", "?max_retries=-1",
		"?dial_timeout=1", "?dial_timeout=250ms", "?read_timeout=0", "?read_timeout=0s", "?write_timeout=0",
		"?write_timeout=2s",
		"?pool_timeout=10m", "?pool_fifo=true", "?pool_fifo=0",
		"?pool_size=1", "?pool_size=10000", "?pool_size=4&min_idle_conns=4&max_idle_conns=4",
		"?max_active_conns=0", "?max_active_conns=10000", "?pool_size=8&max_concurrent_dials=8",
		"?pipeline_pool_size=-1", "?pipeline_pool_size=10000",
		"?pipeline_read_buffer_size=1024", "?pipeline_write_buffer_size=1048576",
		"?conn_max_idle_time=0", "?idle_timeout=24h", "?max_conn_age=1h", "?conn_max_lifetime=0", "?max_conn_age=0",
		"?conn_max_lifetime=1h&conn_max_lifetime_jitter=1h", "?conn_max_lifetime_jitter=0",
		"?conn_max_lifetime=0&conn_max_lifetime_jitter=0", "?max_conn_age=1s&conn_max_lifetime_jitter=1s",
	}
	for _, q := range valid {
		t.Run("Valid"+q, func(t *testing.T) {
			require.NoError(t, fromURL(t, "redis://127.0.0.1:6379"+q))
		})
	}
	require.NoError(t, fromURL(t, "rediss://127.0.0.1:6379?skip_verify=true"))

	invalid := []struct{ query, want string }{
		{"?pool_size=-1", "option pool_size: -1 is out of range: want 1 to 10000"},
		{"?pool_size=0", "option pool_size: 0 is out of range"},
		{"?pool_size=100000000", "option pool_size: 100000000 is out of range"},
		{"?pool_size=99999999999999999999", `option pool_size: "99999999999999999999" is not an integer`},
		{"?pool_size=x", `option pool_size: "x" is not an integer`},
		{"?pool_size=1&pool_size=2", "option pool_size given 2 times"},
		{"?min_idle_conns=-1", "option min_idle_conns: -1 is out of range"},
		{"?pool_size=2&min_idle_conns=3", "option min_idle_conns: 3 is out of range: want 0 to 2"},
		{"?min_idle_conns=3&max_idle_conns=2", "option min_idle_conns: 3 is more than max_idle_conns (2)"},
		{"?min_idle_conns=3&max_active_conns=2", "option min_idle_conns: 3 is more than max_active_conns (2)"},
		{"?max_idle_conns=-1", "option max_idle_conns: -1 is out of range"},
		{"?max_idle_conns=10001", "option max_idle_conns: 10001 is out of range"},
		{"?max_active_conns=-1", "option max_active_conns: -1 is out of range"},
		{"?max_active_conns=2147483648", "option max_active_conns: 2147483648 is out of range"},
		{"?pool_size=2&max_concurrent_dials=3", "option max_concurrent_dials: 3 is out of range: want 1 to 2"},
		{"?max_concurrent_dials=-1", "option max_concurrent_dials: -1 is out of range"},
		{"?pipeline_pool_size=0", "option pipeline_pool_size: 0: want -1 (none) or 1 to 10000"},
		{"?pipeline_pool_size=-2", "option pipeline_pool_size: -2 is out of range"},
		{"?pipeline_read_buffer_size=1073741824", "option pipeline_read_buffer_size: 1073741824 is out of range"},
		{"?pipeline_write_buffer_size=-1", "option pipeline_write_buffer_size: -1 is out of range"},
		{"?dial_timeout=0", `option dial_timeout: "0" is out of range: want 1ms to 10m0s`},
		{"?dial_timeout=-1s", `option dial_timeout: "-1s" is out of range`},
		{"?dial_timeout=1h", `option dial_timeout: "1h" is out of range`},
		{"?dial_timeout=18446744074", `option dial_timeout: "18446744074" seconds is out of range`},
		{"?dial_timeout=x", `option dial_timeout: "x" is not a duration such as 500ms or 2s, or a number of seconds`},
		{"?read_timeout=1ns", `option read_timeout: "1ns" is out of range: want 1ms to 10m0s, or 0 for none`},
		{"?read_timeout=-1", `option read_timeout: "-1" is out of range: want 1ms to 10m0s, or 0 for none`},
		{"?read_timeout=-1s", `option read_timeout: "-1s" is out of range`},
		{"?read_timeout=-9223372036854775808", `option read_timeout: "-9223372036854775808" is out of range`},
		{"?write_timeout=11m", `option write_timeout: "11m" is out of range`},
		{"?write_timeout=-1", `option write_timeout: "-1" is out of range: want 1ms to 10m0s, or 0 for none`},
		{"?write_timeout=-2", `option write_timeout: "-2" is out of range`},
		{"?write_timeout=-5ms", `option write_timeout: "-5ms" is out of range`},
		{"?pool_timeout=0", `option pool_timeout: "0" is out of range`},
		{"?pool_timeout=-1", `option pool_timeout: "-1" is out of range: want 1ms to 10m0s`},
		{"?conn_max_idle_time=25h", `option conn_max_idle_time: "25h" is out of range`},
		{"?conn_max_idle_time=-1", `option conn_max_idle_time: "-1" is out of range: want 1ms to 24h0m0s, or 0 for none`},
		{"?idle_timeout=-1s", `option idle_timeout: "-1s" is out of range`},
		{"?idle_timeout=1s&conn_max_idle_time=1s", "option idle_timeout: the old name of conn_max_idle_time, also given"},
		{"?conn_max_lifetime=100000h", `option conn_max_lifetime: "100000h" is out of range`},
		{"?conn_max_lifetime=-1", `option conn_max_lifetime: "-1" is out of range: want 1ms to 24h0m0s, or 0 for none`},
		{"?conn_max_lifetime=-1h&conn_max_lifetime_jitter=1s", `option conn_max_lifetime: "-1h" is out of range`},
		{"?max_conn_age=-1", `option max_conn_age: "-1" is out of range`},
		{"?max_conn_age=1s&conn_max_lifetime=1s", "option max_conn_age: the old name of conn_max_lifetime, also given"},
		{"?conn_max_lifetime_jitter=1s", "option conn_max_lifetime_jitter: needs conn_max_lifetime"},
		{"?conn_max_lifetime=0&conn_max_lifetime_jitter=1s", "option conn_max_lifetime_jitter: needs conn_max_lifetime"},
		{"?conn_max_lifetime_jitter=-1", `option conn_max_lifetime_jitter: "-1" is out of range`},
		{"?conn_max_lifetime=1s&conn_max_lifetime_jitter=2s", "option conn_max_lifetime_jitter: 2s is more than conn_max_lifetime (1s)"},
		{"?max_conn_age=1s&conn_max_lifetime_jitter=2s", "option conn_max_lifetime_jitter: 2s is more than max_conn_age (1s)"},
		{"?protocol=4", `option protocol: "4": want 2 or 3`},
		{"?protocol=-1", `option protocol: "-1": want 2 or 3`},
		{"?client_name=a%20b", `option client_name: "a b": want printable ASCII without spaces`},
		{"?client_name=a%0Ab", `option client_name: "a\nb"`},
		{"?max_retries=3", `option max_retries: "3": want 0 or -1, as FromURL never retries`},
		{"?min_retry_backoff=1s", "option min_retry_backoff: FromURL never retries"},
		{"?max_retry_backoff=1s", "option max_retry_backoff: FromURL never retries"},
		{"?pool_fifo=yes", `option pool_fifo: "yes": want true or false or 1 or 0`},
		{"?skip_verify=true", "option skip_verify: needs a rediss:// URL"},
		{"?db=-1", "option db: -1 is out of range: want 0 to 2147483646"},
		{"?db=2147483647", "option db: 2147483647 is out of range"},
		{"/1?db=1", "the database is given both in the path and as option db"},
		{"/-1", `invalid database number in path "/-1": want 0 to 2147483646`},
		{"/1/2", `invalid URL path "/1/2": want /db`},
		{"?nope=1", `unknown option "nope"`},
		{"?password=x", `unknown option "password"`},
		{"?addr=127.0.0.2:6379", `unknown option "addr"`},
		{"?a;b", "query: invalid semicolon separator in query"},
		{"?x=%zz", `query: a malformed escape: write "%" as %25`},
	}
	for _, tc := range invalid {
		t.Run("Invalid"+tc.query, func(t *testing.T) {
			err := fromURL(t, "redis://127.0.0.1:6379"+tc.query)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), `pool: invalid URL "redis://127.0.0.1:6379`), err.Error())
			assert.NotContains(t, err.Error(), "?", "the query is left out of the URL quoted")
		})
	}

	t.Run("SkipVerifyWithTLSConfig", func(t *testing.T) {
		err := fromURL(t, "rediss://127.0.0.1:6379?skip_verify=true", pool.WithTLSConfig(nil))
		require.ErrorContains(t, err, "nil TLS config")
	})
}

func TestFromURLShape(t *testing.T) {
	tests := []struct{ url, want string }{
		{"", "pool: invalid URL: scheme must be redis or rediss: want redis://host or rediss://host"},
		{"127.0.0.1:6379", "pool: invalid URL: scheme must be redis or rediss"},
		{"http://127.0.0.1", `pool: invalid URL: scheme must be redis or rediss, not "http"`},
		{"unix:///tmp/redis.sock", `scheme must be redis or rediss, not "unix"`},
		{"redis://", "pool: invalid URL: no host"},
		{"redis://127.0.0.1:0", "pool: invalid URL: port out of range: want 1 to 65535"},
		{"redis://127.0.0.1:65536", "port out of range"},
		{"redis://127.0.0.1:x", "pool: invalid URL: the port is not a number"},
		{"redis://127.0.0.1:6379:1", `pool: invalid URL: more than one ":" in the host: want host:port, an IPv6 address in brackets`},
		{"redis://::1", `pool: invalid URL: more than one ":" in the host`},
		{"redis://::1:6379", `pool: invalid URL: more than one ":" in the host`},
		{"redis://[::1]:6379:1", "pool: invalid URL: the port is not a number"},
		{"redis://127.0.0.1#f", `pool: invalid URL: a fragment ("#..."): percent-encode "#" as %23`},
		{"redis://[::1", "pool: invalid URL: missing ']' in host"},
		{"redis://a b", "pool: invalid URL: a character not allowed in a host name"},
		{"redis://:pa/ss@127.0.0.1", `pool: invalid URL: "@" after the host: percent-encode "/", "?", "#" and "@"`},
		{"redis://:pa%zz@127.0.0.1", "pool: invalid URL: malformed user name or password"},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			require.ErrorContains(t, fromURL(t, tc.url), tc.want)
		})
	}
	for _, ok := range []string{"REDIS://127.0.0.1", "redis://[::1]:6379/1", "redis://:6379", "redis://alice:p%2Fw%40x@127.0.0.1"} {
		require.NoError(t, fromURL(t, ok), ok)
	}
}

// FuzzFromURL checks that FromURL never panics, allocates no more than a
// small client needs, and never shows the password or user name in an error,
// whatever the URL: rawURL is scheme + user + ":" + password + "@" + rest,
// each part fuzzed.
func FuzzFromURL(f *testing.F) {
	seeds := [][4]string{
		{"redis://", "", "", "127.0.0.1:6379"},
		{"redis://", "alice", "s3cr3t/pw", "host"},
		{"redis://", "", "s3cr3t?pw", "host"},
		{"redis://", "", "s3cr3t#pw", "host"},
		{"rediss://", "alice", "s3cr3t", "h:1/2?skip_verify=true"},
		{"redis://", "alice", "s3cr3t", "h?pool_size=-1"},
		{"redis://", "alice", "s3cr3t", "h?pool_size=100000000"},
		{"redis://", "alice", "s3cr3t", "h?min_idle_conns=2&max_active_conns=1&pipeline_pool_size=-1"},
		{"redis://", "alice", "s3%zzcr3t", "h?dial_timeout=18446744074&read_timeout=0"},
		{"redis:", "alice", "s3cr3t", "h"},
		{"", "alice", "s3cr3t", "h"},
		{"redis://", "al:ce", "s3@cr3t", "[::1]:x"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, scheme, user, pass, rest string) {
		rawURL := scheme + user + ":" + pass + "@" + rest
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p, err := pool.FromURL(rawURL, pool.WithDialer(refuse))
		if p != nil {
			_ = p.Close()
		}
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
			t.Fatalf("FromURL(%q) allocated %d MiB", rawURL, n>>20)
		}
		if (p == nil) == (err == nil) {
			t.Fatalf("FromURL(%q) = %v, %v: want a Pool or an error", rawURL, p, err)
		}
		if err == nil {
			return
		}
		// A secret that the error would show in its place anyway (a word of
		// the message, a piece of the host) proves nothing: compare with the
		// error for the same URL with other letters in the userinfo.
		refURL := scheme + blank(user) + ":" + blank(pass) + "@" + rest
		for _, secret := range []string{user, pass} {
			if len(secret) < 4 || !strings.Contains(err.Error(), secret) {
				continue
			}
			_, ref := pool.FromURL(refURL, pool.WithDialer(refuse))
			if ref == nil || !strings.Contains(ref.Error(), secret) {
				t.Fatalf("FromURL(%q): error %q shows %q", rawURL, err, secret)
			}
		}
	})
}

// blank returns a string of s's length made of one letter that s lacks.
func blank(s string) string {
	c := "x"
	if strings.Contains(s, c) {
		c = "y"
		if strings.Contains(s, c) {
			c = "z"
		}
	}
	return strings.Repeat(c, len(s))
}

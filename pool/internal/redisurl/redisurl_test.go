package redisurl_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/pool/internal/redisurl"
)

func TestParseFindsTheUserinfoAsURLParseDoes(t *testing.T) {
	for _, raw := range []string{
		"redis://u:p@h", "REDIS://u:p@h:1/2?x=y", "rediss://u:p@a@h", "redis://:p@[::1]:6379", "redis://h",
	} {
		u, err := redisurl.Parse(raw)
		require.NoError(t, err, raw)
		want, err := url.Parse(raw)
		require.NoError(t, err)
		assert.Equal(t, want.String(), u.String())
		assert.NotContains(t, redisurl.Redacted(u), "p@", "no userinfo")
		assert.NotContains(t, redisurl.Redacted(u), "?", "no query")
	}
}

// TestParseHostColons checks that a host is one name or address and at
// most one port: url.Parse takes "h:1:2" as host "h:1" and port "2", which
// go-redis would dial as "[h:1]:2".
func TestParseHostColons(t *testing.T) {
	tests := []struct{ url, err string }{
		{"redis://127.0.0.1:6379", ""},
		{"redis://127.0.0.1", ""},
		{"redis://:6379", ""},
		{"redis://[::1]:6379", ""},
		{"redis://[::1]", ""},
		{"redis://u:p:q@127.0.0.1:6379", ""}, // colons in the userinfo are not the host's
		{"redis://127.0.0.1:6379:1", `more than one ":" in the host`},
		{"redis://127.0.0.1::6379", `more than one ":" in the host`},
		{"redis://::1", `more than one ":" in the host`},
		{"redis://u:p@::1:6379", `more than one ":" in the host`},
		{"redis://[::1]:6379:1", "the port is not a number"},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			_, err := redisurl.Parse(tc.url)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func TestQueryDuration(t *testing.T) {
	tests := []struct {
		query string
		none  bool
		want  time.Duration
		err   string
	}{
		{"d=2", false, 2 * time.Second, ""},
		{"d=250ms", false, 250 * time.Millisecond, ""},
		{"d=0", true, redisurl.None, ""},
		{"d=0s", true, redisurl.None, ""},
		{"d=-0", true, redisurl.None, ""},
		{"d=-1", true, 0, `option d: "-1" is out of range: want 1ms to 1h0m0s, or 0 for none`},
		{"d=-9223372036854775808", true, 0, `option d: "-9223372036854775808" is out of range`},
		{"d=-1s", true, 0, `option d: "-1s" is out of range: want 1ms to 1h0m0s, or 0 for none`},
		{"d=1ns", true, 0, `option d: "1ns" is out of range: want 1ms to 1h0m0s, or 0 for none`},
		{"d=0", false, 0, `option d: "0" is out of range: want 1ms to 1h0m0s`},
		{"d=-1", false, 0, `option d: "-1" is out of range: want 1ms to 1h0m0s`},
		{"d=9223372037", false, 0, `option d: "9223372037" seconds is out of range`},
		{"d=18446744074", false, 0, `seconds is out of range`}, // wraps around to 0.3s when multiplied unchecked
		{"d=99999999999999999999", false, 0, `seconds is out of range`},
		{"d=2h", false, 0, `option d: "2h" is out of range`},
		{"d=x", false, 0, `option d: "x" is not a duration such as 500ms or 2s, or a number of seconds`},
		{"d=", false, 7, ""},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			q, err := redisurl.ParseQuery(&url.URL{RawQuery: tc.query}, "d")
			require.NoError(t, err)
			got := q.Duration("d", redisurl.GoDurationOrSeconds, time.Millisecond, time.Hour, tc.none, 7)
			if tc.err != "" {
				require.ErrorContains(t, q.Err(), tc.err)
				if !tc.none {
					assert.NotContains(t, q.Err().Error(), "for none", "no zero offered where it is refused")
				}
				return
			}
			require.NoError(t, q.Err())
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestQuoteCutsLongValues(t *testing.T) {
	assert.Equal(t, `"`+strings.Repeat("a", 32)+`"...`, redisurl.Quote(strings.Repeat("a", 1000)))
	assert.Equal(t, `"a\nb"`, redisurl.Quote("a\nb"))
}

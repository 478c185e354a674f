package rueidispool_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/pool/rueidispool"
)

// fromURL is rueidispool.FromURL, closing the Pool. FromURL does not dial.
func fromURL(t *testing.T, rawURL string, opts ...rueidispool.Option) error {
	t.Helper()
	p, err := rueidispool.FromURL(rawURL, opts...)
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
		"", "?", "/0", "?db=3", "/2147483646", "?dial_timeout=1ms", "?write_timeout=10m",
		"?protocol=2", "?protocol=3", "?client_name=lock-1", "?max_retries=0", "?max_retries=-1", "?client_cache=0",
	}
	for _, q := range valid {
		t.Run("Valid"+q, func(t *testing.T) {
			require.NoError(t, fromURL(t, "redis://127.0.0.1:6379"+q))
		})
	}
	require.NoError(t, fromURL(t, "rediss://127.0.0.1:6379?skip_verify=true"))

	invalid := []struct{ query, want string }{
		{"?dial_timeout=-1s", `option dial_timeout: "-1s" is out of range: want 1ms to 10m0s`},
		{"?dial_timeout=0", `option dial_timeout: "0" is out of range`},
		{"?dial_timeout=5", `option dial_timeout: "5" is not a duration such as 500ms or 2s`},
		{"?write_timeout=1h", `option write_timeout: "1h" is out of range`},
		{"?protocol=4", `option protocol: "4": want 2 or 3`},
		{"?client_name=a%20b", `option client_name: "a b": want printable ASCII without spaces`},
		{"?max_retries=3", `option max_retries: "3": want 0 or -1, as the client never resends a command`},
		{"?client_cache=1", `option client_cache: "1": want 0, as the client never caches`},
		{"?skip_verify=true", "option skip_verify: needs a rediss:// URL"},
		{"?db=-1", "option db: -1 is out of range: want 0 to 2147483646"},
		{"/1?db=1", "the database is given both in the path and as option db"},
		{"/x", `invalid database number in path "/x"`},
		{"?pool_size=-1", `unknown option "pool_size"`},
		{"?db=1&db=2", "option db given 2 times"},
		{"?db=", "option db: empty value"},
		{"?dial_timeout=", "option dial_timeout: empty value"},
		{"?addr=127.0.0.1:2", "one node per Pool"},
	}
	for _, tc := range invalid {
		t.Run("Invalid"+tc.query, func(t *testing.T) {
			err := fromURL(t, "redis://127.0.0.1:6379"+tc.query)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), `rueidispool: invalid URL "redis://127.0.0.1:6379`), err.Error())
		})
	}

	t.Run("HostWithTwoPorts", func(t *testing.T) {
		require.ErrorContains(t, fromURL(t, "redis://127.0.0.1:6379:1"),
			`rueidispool: invalid URL: more than one ":" in the host`)
	})

	t.Run("SkipVerify", func(t *testing.T) {
		require.ErrorContains(t, fromURL(t, "rediss://127.0.0.1:6379?skip_verify="),
			"option skip_verify: empty value")
		require.ErrorContains(t, fromURL(t, "rediss://127.0.0.1:6379?skip_verify=1", rueidispool.WithTLSConfig(nil)),
			"nil TLS config")
	})
}

// FuzzFromURL checks that FromURL never panics and never shows the password
// or user name in an error, whatever the URL: rawURL is scheme + user + ":" +
// password + "@" + rest, each part fuzzed.
func FuzzFromURL(f *testing.F) {
	seeds := [][4]string{
		{"redis://", "", "", "127.0.0.1:6379"},
		{"redis://", "alice", "s3cr3t/pw", "host"},
		{"redis://", "", "s3cr3t#pw", "host"},
		{"rediss://", "alice", "s3cr3t", "h:1/2?skip_verify=&protocol=2"},
		{"redis://", "alice", "s3cr3t", "h?dial_timeout=-1s&addr=x"},
		{"redis://", "al:ce", "s3@cr3t", "[::1]:x"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, scheme, user, pass, rest string) {
		rawURL := scheme + user + ":" + pass + "@" + rest
		p, err := rueidispool.FromURL(rawURL)
		if p != nil {
			_ = p.Close()
		}
		if (p == nil) == (err == nil) {
			t.Fatalf("FromURL(%q) = %v, %v: want a Pool or an error", rawURL, p, err)
		}
		if err == nil {
			return
		}
		refURL := scheme + blank(user) + ":" + blank(pass) + "@" + rest
		for _, secret := range []string{user, pass} {
			if len(secret) < 4 || !strings.Contains(err.Error(), secret) {
				continue
			}
			_, ref := rueidispool.FromURL(refURL)
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

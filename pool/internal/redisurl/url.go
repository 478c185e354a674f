// Package redisurl parses redis:// and rediss:// URLs for the pool adapters,
// so that no error shows any part of a URL's userinfo, however malformed the
// URL, and no query option reaches a client library unchecked.
//
// A password with an unescaped "/", "?" or "#" is the usual trap: url.Parse
// then ends the host at that character and reports the password as a port
// ("redis://:pa/ss@host" gives `invalid port ":pa"`). Parse finds the
// userinfo the way url.Parse does, refuses an "@" that url.Parse would not
// read as the end of the userinfo, and takes its error messages only from the
// URL with the userinfo cut out.
package redisurl

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// errMisplacedAt is returned for an "@" after the host: a user name or
// password with an unescaped "/", "?" or "#" (or an "@" in the path or
// query).
var errMisplacedAt = errors.New(`"@" after the host: percent-encode "/", "?", "#" and "@" ` +
	`in the user name and password as %2F, %3F, %23 and %40, or pass them with WithCredentials`)

// errMultiColon is returned for a host with more than one ":" outside
// brackets: two ports, or an IPv6 address without its brackets.
var errMultiColon = errors.New(`more than one ":" in the host: want host:port, ` +
	`an IPv6 address in brackets ([::1]:6379)`)

// errUserinfo is returned when only the userinfo keeps the URL from parsing.
var errUserinfo = errors.New("malformed user name or password: percent-encode " +
	`the characters other than letters, digits and -._~!$&'()*+,;=: in them`)

// Parse parses rawURL, which must be a redis:// or rediss:// URL naming a
// host: a name or an IPv4 address, or an IPv6 address in brackets, then at
// most one port, from 1 to 65535. Its error, if any, quotes nothing from the
// URL but the scheme: the userinfo can hold a password, and when the URL is
// malformed no part of it is surely not the userinfo. The query is left to
// [ParseQuery].
func Parse(rawURL string) (*url.URL, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok || !validScheme(scheme) {
		return nil, errors.New("scheme must be redis or rediss: want redis://host or rediss://host")
	}
	if s := strings.ToLower(scheme); s != "redis" && s != "rediss" {
		return nil, fmt.Errorf("scheme must be redis or rediss, not %q", scheme)
	}
	// url.Parse ends the authority at the first "/", "?" or "#" and takes
	// the userinfo up to the authority's last "@": an "@" after that first
	// character means some userinfo was read as host, path or query.
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if strings.Contains(rest[end:], "@") {
		return nil, errMisplacedAt
	}
	bare := scheme + "://" + rest[strings.LastIndex(rest[:end], "@")+1:]
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error quotes the whole URL, and its cause may quote a piece of
		// the userinfo (an escape, a "port"): explain with the bare URL's,
		// and even then quote nothing, as a password missing its "@host"
		// is no userinfo to url.Parse ("redis://:pass" has a bad port).
		if _, berr := url.Parse(bare); berr != nil {
			return nil, describe(berr)
		}
		return nil, errUserinfo
	}
	switch {
	case u.Host == "":
		return nil, errors.New("no host")
	case !strings.HasPrefix(u.Host, "[") && strings.Count(u.Host, ":") > 1:
		// url.Parse reads "h:1:2" as host "h:1" and port "2", which
		// go-redis dials as "[h:1]:2": neither is what was meant.
		return nil, errMultiColon
	case u.Fragment != "" || strings.Contains(rawURL, "#"):
		return nil, errors.New(`a fragment ("#..."): percent-encode "#" as %23`)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, errors.New("port out of range: want 1 to 65535")
		}
	}
	return u, nil
}

// Redacted returns u's scheme, host and path: no userinfo, and no query,
// where a secret may also have been put by mistake.
func Redacted(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
}

// describe returns what is wrong with a URL that url.Parse refused,
// quoting nothing from it.
func describe(err error) error {
	var (
		esc  url.EscapeError
		host url.InvalidHostError
		ue   *url.Error
	)
	if errors.As(err, &ue) {
		err = ue.Err // it repeats the URL
	}
	switch msg := err.Error(); {
	case errors.As(err, &esc):
		return errors.New(`a malformed escape: write "%" as %25`)
	case errors.As(err, &host):
		return errors.New("a character not allowed in a host name")
	case strings.HasPrefix(msg, "invalid port"):
		return errors.New("the port is not a number")
	case strings.ContainsAny(msg, "\"`"): // %q, as in ParseAddr's errors
		return errors.New("malformed host")
	default:
		return err // a fixed text: "missing ']' in host", ...
	}
}

// validScheme reports whether s is an RFC 3986 scheme: it then cannot hold
// userinfo, which "://" would have to follow.
func validScheme(s string) bool {
	if s == "" || !isAlpha(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isAlpha(c) && !('0' <= c && c <= '9') && c != '+' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// Quote quotes s, cut to a length fit for an error message.
func Quote(s string) string {
	const max = 32
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}

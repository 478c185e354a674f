package redisurl

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Query is the query of a URL, each option given at most once.
//
// Its getters check one option each and keep the first error, so that a
// caller checks every option in a row and looks at [Query.Err] once. Each
// error names the option. They take an option with an empty value as
// absent, as go-redis reads it: the default.
type Query struct {
	q   map[string]string
	err error
}

// ParseQuery parses u's query. It refuses an option that is not in known or
// is given twice (the libraries differ on which one wins), and a query that
// does not decode.
func ParseQuery(u *url.URL, known ...string) (*Query, error) {
	vs, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("query: %w", describe(err))
	}
	q := &Query{q: make(map[string]string, len(vs))}
	for _, n := range slices.Sorted(maps.Keys(vs)) { // the same error for the same URL
		switch {
		case !slices.Contains(known, n):
			return nil, fmt.Errorf("unknown option %s", Quote(n))
		case len(vs[n]) > 1:
			return nil, fmt.Errorf("option %s given %d times", n, len(vs[n]))
		}
		q.q[n] = vs[n][0]
	}
	return q, nil
}

// Err returns the first error of the getters called so far.
func (q *Query) Err() error { return q.err }

// Has reports whether the option name has a non-empty value.
func (q *Query) Has(name string) bool {
	_, ok := q.value(name)
	return ok
}

// Raw returns the value of option name, empty or not, and whether it is in
// the query at all, for the options a library reads its own way.
func (q *Query) Raw(name string) (string, bool) {
	s, ok := q.q[name]
	return s, ok
}

// value returns the non-empty value of option name.
func (q *Query) value(name string) (string, bool) {
	s := q.q[name]
	return s, s != ""
}

// Fail records err about option name, unless an error is already recorded.
func (q *Query) Fail(name string, err error) {
	q.fail(fmt.Errorf("option %s: %w", name, err))
}

func (q *Query) fail(err error) {
	if q.err == nil {
		q.err = err
	}
}

// Int returns the value of option name, an integer from lo to hi, or def
// when absent.
func (q *Query) Int(name string, lo, hi, def int) int {
	s, ok := q.value(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		q.Fail(name, fmt.Errorf("%s is not an integer", Quote(s)))
	case n < lo || n > hi:
		q.Fail(name, fmt.Errorf("%d is out of range: want %d to %d", n, lo, hi))
	default:
		return n
	}
	return def
}

// OneOf returns the value of option name, one of allowed, or "" when absent.
func (q *Query) OneOf(name string, allowed ...string) string {
	s, ok := q.value(name)
	if ok && !slices.Contains(allowed, s) {
		q.Fail(name, fmt.Errorf("%s: want %s", Quote(s), strings.Join(allowed, " or ")))
		return ""
	}
	return s
}

// Bool returns the value of option name (true, false, 1 or 0), or def when
// absent.
func (q *Query) Bool(name string, def bool) bool {
	switch q.OneOf(name, "true", "false", "1", "0") {
	case "true", "1":
		return true
	case "false", "0":
		return false
	}
	return def
}

// DurationSyntax is how a query option writes a duration.
type DurationSyntax int

const (
	// GoDuration is time.ParseDuration's syntax ("500ms", "2s"), as rueidis
	// reads it.
	GoDuration DurationSyntax = iota
	// GoDurationOrSeconds also takes a plain integer as seconds, as
	// go-redis does. go-redis reads zero or less as "none"; [Query.Duration]
	// takes zero only.
	GoDurationOrSeconds
)

// None is what [Query.Duration] returns for an option that says "none".
const None time.Duration = -1

// Duration returns the value of option name, from lo to hi, or def when
// absent. With GoDurationOrSeconds and none set, a zero value ("0", "0s")
// returns [None]. Any other value out of range is an error, negative ones
// too: go-redis's URL parser reads them all as "none", where its Options
// give -1 and -2 meanings of their own, so that a negative value may not
// mean what its writer thought.
func (q *Query) Duration(name string, syntax DurationSyntax, lo, hi time.Duration, none bool, def time.Duration) time.Duration {
	s, ok := q.value(name)
	if !ok {
		return def
	}
	none = none && syntax == GoDurationOrSeconds
	d, err := parseDuration(s, syntax)
	switch {
	case err != nil:
		q.Fail(name, err)
	case d == 0 && none:
		return None
	case d < lo || d > hi:
		want := fmt.Sprintf("%v to %v", lo, hi)
		if none {
			want += ", or 0 for none"
		}
		q.Fail(name, fmt.Errorf("%s is out of range: want %s", Quote(s), want))
	default:
		return d
	}
	return def
}

// parseDuration reads s as syntax does, without overflow: go-redis
// multiplies a number of seconds by time.Second unchecked, so that a huge
// count wraps around to any duration at all. A negative number of seconds
// reads as -1ns, whatever its size: it is out of every range.
func parseDuration(s string, syntax DurationSyntax) (time.Duration, error) {
	if syntax == GoDurationOrSeconds {
		n, err := strconv.Atoi(s)
		switch {
		case err == nil && n < 0:
			return -1, nil
		case err == nil && n <= math.MaxInt64/int(time.Second):
			return time.Duration(n) * time.Second, nil
		case err == nil || errors.Is(err, strconv.ErrRange):
			return 0, fmt.Errorf("%s seconds is out of range", Quote(s))
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		want := "a duration such as 500ms or 2s"
		if syntax == GoDurationOrSeconds {
			want += ", or a number of seconds"
		}
		return 0, fmt.Errorf("%s is not %s", Quote(s), want)
	}
	return d, nil
}

// ClientName returns option name, checked as Redis checks CLIENT SETNAME
// (printable ASCII, no spaces), or "" when absent: a name Redis refuses
// would fail every connection.
func (q *Query) ClientName(name string) string {
	s := q.q[name]
	for i := 0; i < len(s); i++ {
		if s[i] < '!' || s[i] > '~' {
			q.Fail(name, fmt.Errorf("%s: want printable ASCII without spaces", Quote(s)))
			return ""
		}
	}
	return s
}

// DB returns the database that u's path ("/3") or option db selects, from 0
// to 2^31-2 (the most a Redis server can have), or 0 when neither does.
// Giving both is refused: the libraries differ on which one wins.
func (q *Query) DB(u *url.URL) int {
	const hi = math.MaxInt32 - 1
	path := strings.TrimPrefix(u.Path, "/")
	switch {
	case path == "":
		return q.Int("db", 0, hi, 0)
	case strings.Contains(path, "/"):
		q.fail(fmt.Errorf("invalid URL path %s: want /db, a database number", Quote(u.Path)))
	case q.Has("db"):
		q.fail(errors.New("the database is given both in the path and as option db"))
	default:
		n, err := strconv.Atoi(path)
		if err != nil || n < 0 || n > hi {
			q.fail(fmt.Errorf("invalid database number in path %s: want 0 to %d", Quote(u.Path), hi))
			return 0
		}
		return n
	}
	return 0
}

package conformance

import (
	"context"
	"crypto/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/internal/redistls"
	"github.com/redlockgo/redlock/pool"
)

func (s *suite) testSetNX(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	p := s.open(t, srv.URL(), nil)
	rc := srv.Client(t)
	c := ctx(t)

	t.Run("SetsWithMillisecondTTL", func(t *testing.T) {
		const ttl = 61_234 * time.Millisecond // not a whole number of seconds
		before := time.Now()
		ok, err := p.SetNX(c, "k:ms", "v1", ttl)
		after := time.Now()
		require.NoError(t, err)
		require.True(t, ok)
		v, err := rc.Get(c, "k:ms").Result()
		require.NoError(t, err)
		assert.Equal(t, "v1", v)
		// PEXPIRETIME is absolute, so the check holds however long the
		// calls took: the expiry lies between the two readings plus ttl.
		at, err := rc.Do(c, "PEXPIRETIME", "k:ms").Int64()
		require.NoError(t, err)
		assert.GreaterOrEqual(t, at, before.Add(ttl).UnixMilli()-1)
		assert.LessOrEqual(t, at, after.Add(ttl).UnixMilli()+1)
	})

	t.Run("RefusesExistingKey", func(t *testing.T) {
		require.NoError(t, rc.Set(c, "k:taken", "other", time.Minute).Err())
		ok, err := p.SetNX(c, "k:taken", "mine", time.Minute)
		require.NoError(t, err)
		assert.False(t, ok)
		v, err := rc.Get(c, "k:taken").Result()
		require.NoError(t, err)
		assert.Equal(t, "other", v, "SetNX never overwrites")
	})

	t.Run("ExpiresAndCanBeSetAgain", func(t *testing.T) {
		ok, err := p.SetNX(c, "k:short", "a", 30*time.Millisecond)
		require.NoError(t, err)
		require.True(t, ok)
		require.Eventually(t, func() bool {
			ok, err := p.SetNX(c, "k:short", "b", time.Minute)
			return err == nil && ok
		}, 5*time.Second, 10*time.Millisecond)
	})

	t.Run("OneWinnerAmongConcurrentCallers", func(t *testing.T) {
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				ok, err := p.SetNX(c, "k:race", string(rune('a'+i)), time.Minute)
				assert.NoError(t, err)
				if ok {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		assert.Equal(t, int32(1), wins.Load())
	})
}

func (s *suite) testEval(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	p := s.open(t, srv.URL(), nil)
	c := ctx(t)

	tests := []struct {
		name string
		src  string
		keys []string
		args []any
		want any
	}{
		{"Integer", "return 42", nil, nil, int64(42)},
		{"NegativeInteger", "return -7", nil, nil, int64(-7)},
		{"BulkString", "return 'hello'", nil, nil, "hello"},
		{"StatusReply", "return redis.status_reply('OK')", nil, nil, "OK"},
		{"Nil", "return nil", nil, nil, nil},
		{"FalseIsNil", "return false", nil, nil, nil},
		{"MissingKeyIsNil", "return redis.call('GET', KEYS[1])", []string{"absent"}, nil, nil},
		{"EmptyArray", "return {}", nil, nil, []any{}},
		{"NestedArrayWithNil", "return {1, 'a', {2, 'b'}, false, 3}", nil, nil,
			[]any{int64(1), "a", []any{int64(2), "b"}, nil, int64(3)}},
		{"KeysAndArgs", "return {KEYS[1], KEYS[2], ARGV[1]}", []string{"k1", "k2"}, []any{"a1"},
			[]any{"k1", "k2", "a1"}},
		{"ArgumentEncoding", "return ARGV", nil,
			[]any{"s", int64(-5), 7, uint64(8), 1.5, true, []byte("b")},
			[]any{"s", "-5", "7", "8", "1.5", "1", "b"}},
		{"Writes", "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('INCR', KEYS[1])",
			[]string{"counter"}, []any{int64(41)}, int64(42)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.Eval(c, pool.NewScript(tc.src), tc.keys, tc.args...)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}

	t.Run("ErrorReply", func(t *testing.T) {
		_, err := p.Eval(c, pool.NewScript("return redis.error_reply('boom')"), nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "boom")
	})
	t.Run("NilScript", func(t *testing.T) {
		_, err := p.Eval(c, nil, nil)
		require.Error(t, err)
	})
}

func (s *suite) testNoScript(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	p := s.open(t, srv.URL(), nil)
	rc := srv.Client(t)
	c := ctx(t)
	// A script no node has seen: the first EVALSHA answers NOSCRIPT.
	script := pool.NewScript("-- " + rand.Text() + "\nreturn ARGV[1]")

	cached := func() bool {
		ex, err := rc.ScriptExists(c, script.Hash()).Result()
		require.NoError(t, err)
		return ex[0]
	}
	require.False(t, cached())
	got, err := p.Eval(c, script, nil, "first")
	require.NoError(t, err, "NOSCRIPT falls back to EVAL")
	assert.Equal(t, "first", got)
	assert.True(t, cached(), "EVAL caches the script for the next EVALSHA")

	require.NoError(t, rc.ScriptFlush(c).Err()) // as after a restart
	got, err = p.Eval(c, script, nil, "after flush")
	require.NoError(t, err)
	assert.Equal(t, "after flush", got)

	_, err = p.Eval(c, pool.NewScript("-- "+rand.Text()+"\nreturn redis.error_reply('real error')"), nil)
	require.ErrorContains(t, err, "real error", "an error from a script that runs is not masked by the fallback")
}

// deadlineSlack bounds how late a call may return after its deadline. A
// client that ignored the deadline would wait for its own read timeout
// (go-redis: 3s, rueidis: 10s) or forever; a loaded machine adds well
// under this.
const deadlineSlack = 2 * time.Second

func (s *suite) testDeadline(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	warm := s.open(t, srv.URL(), nil)
	c := ctx(t)
	ok, err := warm.SetNX(c, "warm", "v", time.Minute) // an open connection
	require.NoError(t, err)
	require.True(t, ok)

	srv.Pause()
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			srv.Resume()
		}
	}
	t.Cleanup(resume) // runs before the pools close: a paused node may delay Close

	cold := s.open(t, srv.URL(), nil) // made while the node does not answer
	script := pool.NewScript("return 1")
	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"SetNX", func(ctx context.Context) error { _, err := warm.SetNX(ctx, "k", "v", time.Minute); return err }},
		{"Eval", func(ctx context.Context) error { _, err := warm.Eval(ctx, script, []string{"k"}); return err }},
		{"NewConnection", func(ctx context.Context) error { _, err := cold.SetNX(ctx, "k", "v", time.Minute); return err }},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) { returnsByDeadline(t, c, tc.call) })
	}
	t.Run("CanceledContext", func(t *testing.T) {
		ctx, cancel := context.WithCancel(c)
		cancel()
		start := time.Now()
		_, err := warm.SetNX(ctx, "k", "v", time.Minute)
		require.Error(t, err)
		assert.Less(t, time.Since(start), deadlineSlack)
	})

	resume()
	t.Run("RecoversAfterResume", func(t *testing.T) {
		for _, p := range []pool.Pool{warm, cold} {
			require.Eventually(t, func() bool {
				ctx, cancel := context.WithTimeout(c, time.Second)
				defer cancel()
				_, err := p.Eval(ctx, script, []string{"k"})
				return err == nil
			}, 10*time.Second, 20*time.Millisecond)
		}
	})
}

// returnsByDeadline checks that call, on a paused node, fails and returns by
// a short deadline set on c.
func returnsByDeadline(t *testing.T, c context.Context, call func(ctx context.Context) error) {
	const timeout = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(c, timeout)
	defer cancel()
	start := time.Now()
	err := call(ctx)
	elapsed := time.Since(start)
	require.Error(t, err, "a paused node cannot have answered")
	assert.Less(t, elapsed, timeout+deadlineSlack, "the call must return by its deadline: %v", err)
}

func (s *suite) testAddr(t *testing.T) {
	srv := redistls.Start(t, redistls.Options{Users: []redistls.User{{Name: user, Password: Secret}}})
	c := ctx(t)

	p := s.open(t, srv.URL(user, Secret), nil)
	assert.Equal(t, srv.Addr(), p.Addr(), "Addr is host:port")
	assert.NotContains(t, p.Addr(), Secret)
	assert.NotContains(t, p.Addr(), user)
	ok, err := p.SetNX(c, "acl", "v", time.Minute)
	require.NoError(t, err, "the URL's credentials log in")
	assert.True(t, ok)

	for name, rawURL := range map[string]string{
		"WrongPassword": srv.URL(user, "not-"+Secret),
		"NoCredentials": srv.URL("", ""),
	} {
		t.Run(name, func(t *testing.T) {
			p := s.open(t, rawURL, nil)
			_, err := p.SetNX(c, "acl2", "v", time.Minute)
			require.Error(t, err, "the node requires a login")
			assert.NotContains(t, err.Error(), Secret)
		})
	}

	t.Run("InvalidURLHidesPassword", func(t *testing.T) {
		for _, rawURL := range []string{
			"redis://" + user + ":" + Secret + "@127.0.0.1:notaport",
			"ftp://" + user + ":" + Secret + "@127.0.0.1:6379",
			"redis://" + user + ":" + Secret + "@127.0.0.1:6379/notadb",
			"redis://" + user + ":" + Secret + "@127.0.0.1:6379/0?dial_timeout=x",
		} {
			p, err := s.newPool(rawURL, nil)
			if p != nil {
				_ = p.Close()
			}
			require.Error(t, err, rawURL)
			assert.False(t, strings.Contains(err.Error(), Secret), "error %q shows the password", err)
		}
	})
}

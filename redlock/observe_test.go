package redlock_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

type recorder struct {
	mu     sync.Mutex
	events []redlock.Event
}

func (r *recorder) Observe(_ context.Context, e redlock.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.Kind.String())
	}
	return out
}

func TestObserverSeesTheLifeOfALock(t *testing.T) {
	fn := newFakeNodes(t, 3)
	rec := &recorder{}
	c := newClient(t, fn.pools, redlock.WithObserver(rec))
	l, err := c.TryLock(bg(), "k", time.Minute, redlock.WithFencing())
	require.NoError(t, err)
	require.NoError(t, l.Extend(bg(), time.Minute))
	_, err = c.TryLock(bg(), "k", time.Minute)
	require.Error(t, err)
	require.NoError(t, l.Unlock(bg()))
	assert.Equal(t, []string{"acquired", "extended", "not_obtained", "released"}, rec.kinds())
	assert.Equal(t, l.Fence(), rec.events[0].Fence)
	assert.Equal(t, 1, rec.events[0].Attempts)
	require.ErrorIs(t, rec.events[2].Err, redlock.ErrNotObtained)
	assert.Positive(t, rec.events[3].Held)
}

func TestObserverSeesLoss(t *testing.T) {
	fn := newFakeNodes(t, 3)
	rec := &recorder{}
	c := newClient(t, fn.pools, redlock.WithObserver(rec))
	l, err := c.TryLock(bg(), "k", time.Minute, redlock.WithAutoExtend(0))
	require.NoError(t, err)
	require.NoError(t, c.Close()) // stops the keeper: the lock is lost
	<-l.Done()
	assert.Equal(t, []string{"acquired", "lost"}, rec.kinds())
	require.ErrorIs(t, rec.events[1].Err, redlock.ErrLockLost)
}

func TestLoggerLevelsAndNoSecrets(t *testing.T) {
	fn := newFakeNodes(t, 3)
	var buf bytes.Buffer
	var mu sync.Mutex
	h := slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug})
	c := newClient(t, fn.pools, redlock.WithLogger(slog.New(h)))
	l, err := c.TryLock(bg(), "k", time.Minute)
	require.NoError(t, err)
	_, err = c.TryLock(bg(), "k", time.Minute)
	require.Error(t, err)
	require.NoError(t, l.Unlock(bg()))
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	assert.Contains(t, out, `level=DEBUG msg="redlock: acquired" key=k`)
	assert.Contains(t, out, `level=DEBUG msg="redlock: not_obtained" key=k`, "contention is ordinary")
	assert.Contains(t, out, `level=DEBUG msg="redlock: released" key=k`)
	assert.NotContains(t, out, l.Token(), "tokens are not logged")
	assert.Equal(t, 3, strings.Count(out, "\n"), "nothing else: every node's restarts are checked")

	_, err = redlock.New(fn.pools, redlock.WithLogger(nil))
	require.ErrorContains(t, err, "nil logger")
	_, err = redlock.New(fn.pools, redlock.WithObserver(nil))
	require.ErrorContains(t, err, "nil observer")
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// logLine runs op on a Client logging at Debug to a buffer and returns the
// line logged for an event of kind on key.
func logLine(t *testing.T, fn *fakeNodes, kind, key string, op func(c *redlock.Client)) string {
	t.Helper()
	var buf bytes.Buffer
	var mu sync.Mutex
	h := slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug})
	c := newClient(t, fn.pools, redlock.WithNodeTimeout(100*time.Millisecond), redlock.WithLogger(slog.New(h)))
	op(c)
	require.NoError(t, c.Close())
	mu.Lock()
	defer mu.Unlock()
	for line := range strings.Lines(buf.String()) {
		if strings.Contains(line, `msg="redlock: `+kind+`" key=`+key+" ") {
			return line
		}
	}
	t.Fatalf("no %s logged for %s in %q", kind, key, buf.String())
	return ""
}

func TestLoggerLevelIsWhatAnOperatorActsOn(t *testing.T) {
	fn := newFakeNodes(t, 3)
	holder := newClient(t, fn.pools)
	held, err := holder.TryLock(bg(), "held", time.Minute)
	require.NoError(t, err)
	holder.WaitIdle()
	defer held.Unlock(bg())

	for _, tc := range []struct {
		name, kind, key, level string
		op                     func(c *redlock.Client, key string)
	}{
		{"refused by the holder", "not_obtained", "held", "DEBUG", func(c *redlock.Client, key string) {
			_, _ = c.TryLock(bg(), key, time.Minute)
		}},
		{"caller's deadline while waiting", "not_obtained", "held", "DEBUG", func(c *redlock.Client, key string) {
			ctx, cancel := context.WithTimeout(bg(), 20*time.Millisecond)
			defer cancel()
			_, _ = c.Lock(ctx, key, time.Minute)
		}},
		{"nodes down", "not_obtained", "free", "WARN", func(c *redlock.Client, key string) {
			fn.faults[0].Fail(errDown)
			fn.faults[1].Fail(errDown)
			defer fn.faults[0].Fail(nil)
			defer fn.faults[1].Fail(nil)
			_, _ = c.TryLock(bg(), key, time.Minute)
		}},
		{"nodes silent", "not_obtained", "free", "WARN", func(c *redlock.Client, key string) {
			fn.faults[0].Hang(true)
			fn.faults[1].Hang(true)
			defer fn.faults[0].Hang(false)
			defer fn.faults[1].Hang(false)
			_, _ = c.TryLock(bg(), key, time.Minute)
		}},
		{"release of an expired lock", "release_failed", "expired", "WARN", func(c *redlock.Client, key string) {
			l, err := c.TryLock(bg(), key, time.Minute)
			require.NoError(t, err)
			c.WaitIdle()
			for _, s := range fn.servers {
				s.Del(key) // expired on the nodes
			}
			_ = l.Unlock(bg())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := logLine(t, fn, tc.kind, tc.key, func(c *redlock.Client) { tc.op(c, tc.key) })
			assert.Contains(t, line, "level="+tc.level+" ", line)
		})
	}
}

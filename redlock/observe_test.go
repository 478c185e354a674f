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
	assert.Contains(t, out, `level=WARN msg="redlock: not_obtained" key=k`)
	assert.Contains(t, out, `level=DEBUG msg="redlock: released" key=k`)
	assert.NotContains(t, out, l.Token(), "tokens are not logged")
	assert.Equal(t, 3, strings.Count(out, "\n"))

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

package redlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

// windowCtx holds open the instant between a context's deadline passing and
// its timer firing: Deadline reports a time the test sets (once set, in the
// past), while Err stays nil and Done never closes. A node call's socket
// deadline is its context's, and the socket can time out in that instant:
// the attempt is then cut by the caller's deadline although ctx.Err() still
// says nothing. Seen on real Redis about once in 250 waits that ended on a
// 1s context: the call reported its cut last attempt (every node "no
// answer within the node timeout") instead of the key held, and without
// context.DeadlineExceeded.
type windowCtx struct {
	context.Context
	deadline atomic.Pointer[time.Time]
}

func newWindowCtx() *windowCtx { return &windowCtx{Context: context.Background()} }

func (c *windowCtx) Deadline() (time.Time, bool) {
	if d := c.deadline.Load(); d != nil {
		return *d, true
	}
	return time.Time{}, false
}

// expire moves the deadline into the past.
func (c *windowCtx) expire() {
	d := time.Now().Add(-time.Millisecond)
	c.deadline.Store(&d)
}

// expireAtRetry is a retry strategy that lets a blocking call make one
// refused attempt, then expires ctx before the second (NextDelay(k) is
// asked before attempt k), and stops after a third. It counts the
// attempts asked for.
func expireAtRetry(ctx *windowCtx, asked *atomic.Int32) redlock.LockOption {
	return redlock.WithRetry(redlock.RetryFunc(func(attempt int) (time.Duration, bool) {
		asked.Add(1)
		switch attempt {
		case 1:
			return 5 * time.Millisecond, true
		case 2:
			ctx.expire()
			return 5 * time.Millisecond, true
		}
		return 0, false
	}))
}

// An attempt cut by the caller's deadline ends a blocking call at once,
// and the error is the context's with the refusal of the attempt before:
// the key was held, not the nodes slow.
func TestRealAttemptCutByTheCallersDeadline(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 5)
	c := newClient(t, pools)
	w, err := c.TryLock(bg(), "doc", 10*time.Second)
	require.NoError(t, err)
	defer func() { assert.NoError(t, w.Unlock(bg())) }()
	// Two permits of two, so that a third is refused.
	for range 2 {
		p, err := c.TryAcquirePermit(bg(), "sem", 2, 10*time.Second)
		require.NoError(t, err)
		defer func() { assert.NoError(t, p.Unlock(bg())) }()
	}

	calls := map[string]func(ctx context.Context, opt redlock.LockOption) (*redlock.Lock, error){
		"RLock": func(ctx context.Context, opt redlock.LockOption) (*redlock.Lock, error) {
			return c.RLock(ctx, "doc", 10*time.Second, opt)
		},
		"AcquirePermit": func(ctx context.Context, opt redlock.LockOption) (*redlock.Lock, error) {
			return c.AcquirePermit(ctx, "sem", 2, 10*time.Second, opt)
		},
		"LockAll": func(ctx context.Context, opt redlock.LockOption) (*redlock.Lock, error) {
			return c.LockAll(ctx, []string{"a", "doc"}, 10*time.Second, opt)
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			ctx := newWindowCtx()
			var asked atomic.Int32
			l, err := call(ctx, expireAtRetry(ctx, &asked))
			require.Nil(t, l)
			require.ErrorIs(t, err, redlock.ErrNotObtained)
			assert.ErrorIs(t, err, context.DeadlineExceeded, "the caller's deadline ended the call")
			assert.ErrorIs(t, err, redlock.ErrTaken, "the refusal before the cut attempt: %v", err)
			assert.Equal(t, int32(2), asked.Load(), "no attempt after the cut one")
		})
	}
}

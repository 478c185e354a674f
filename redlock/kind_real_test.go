package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

// held is a key held by one kind of lock, and how Status and a refusal
// name that kind.
type held struct {
	kind string // KeyStatus.Kind
	says string // in a refusal's text
	take func(c *redlock.Client, key string) (*redlock.Lock, error)
}

var heldKinds = []held{
	{"lock", "holds a lock", func(c *redlock.Client, key string) (*redlock.Lock, error) {
		return c.TryLock(bg(), key, 10*time.Second)
	}},
	{"readers", "holds readers", func(c *redlock.Client, key string) (*redlock.Lock, error) {
		return c.TryRLock(bg(), key, 10*time.Second)
	}},
	{"permits", "holds permits", func(c *redlock.Client, key string) (*redlock.Lock, error) {
		return c.TryAcquirePermit(bg(), key, 2, 10*time.Second)
	}},
}

// caller is one acquisition call on key, the kinds it competes with (its
// own family: a wait, not a refusal) and whether it blocks.
type caller struct {
	name    string
	family  []string
	call    func(ctx context.Context, c *redlock.Client, key string) (*redlock.Lock, error)
	blocks  bool
	multiOn bool // the key is one of a multi-lock's
}

var callers = []caller{
	{name: "TryLock", family: []string{"lock", "readers"}, call: func(ctx context.Context, c *redlock.Client, key string) (*redlock.Lock, error) {
		return c.TryLock(ctx, key, time.Second)
	}},
	{name: "Lock", family: []string{"lock", "readers"}, blocks: true, call: func(ctx context.Context, c *redlock.Client, key string) (*redlock.Lock, error) {
		return c.Lock(ctx, key, time.Second)
	}},
	{name: "TryRLock", family: []string{"lock", "readers"}, call: func(ctx context.Context, c *redlock.Client, key string) (*redlock.Lock, error) {
		return c.TryRLock(ctx, key, time.Second)
	}},
	{name: "RLock", family: []string{"lock", "readers"}, blocks: true, call: func(ctx context.Context, c *redlock.Client, key string) (*redlock.Lock, error) {
		return c.RLock(ctx, key, time.Second)
	}},
	{name: "TryAcquirePermit", family: []string{"permits"}, call: func(ctx context.Context, c *redlock.Client, key string) (*redlock.Lock, error) {
		return c.TryAcquirePermit(ctx, key, 1, time.Second)
	}},
	{name: "AcquirePermit", family: []string{"permits"}, blocks: true, call: func(ctx context.Context, c *redlock.Client, key string) (*redlock.Lock, error) {
		return c.AcquirePermit(ctx, key, 1, time.Second)
	}},
	{name: "TryLockAll", family: []string{"lock", "readers"}, multiOn: true, call: func(ctx context.Context, c *redlock.Client, key string) (*redlock.Lock, error) {
		return c.TryLockAll(ctx, []string{key, key + "-other"}, time.Second)
	}},
	{name: "LockAll", family: []string{"lock", "readers"}, multiOn: true, blocks: true, call: func(ctx context.Context, c *redlock.Client, key string) (*redlock.Lock, error) {
		return c.LockAll(ctx, []string{key, key + "-other"}, time.Second)
	}},
}

// Every acquisition on a key that another kind holds is refused at once,
// blocking calls included (they used to wait until their context ended),
// with an error that wraps ErrWrongKind and names the kind the key holds,
// not Redis's WRONGTYPE text; and it leaves the holder's lock untouched.
// On a key of its own family the same call is an ordinary refusal.
func TestRealKeyOfAnotherKindRefusedAtOnce(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 3)
	holder := newClient(t, pools)
	c := newClient(t, pools)
	for _, h := range heldKinds {
		for _, cl := range callers {
			t.Run(cl.name+" on "+h.kind, func(t *testing.T) {
				key := fmt.Sprintf("kind:%s:%s", h.kind, cl.name)
				l, err := h.take(holder, key)
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
				defer cancel()
				if cl.blocks {
					// Within its own family, a blocking call would wait: cut it.
					var cut context.CancelFunc
					ctx, cut = context.WithTimeout(ctx, 300*time.Millisecond)
					defer cut()
				}
				start := time.Now()
				got, err := cl.call(ctx, c, key)
				took := time.Since(start)
				other := true
				for _, f := range cl.family {
					other = other && f != h.kind
				}
				if !other {
					// Same family: shared (readers, a free permit) or an
					// ordinary refusal, never a kind error.
					assert.NotErrorIs(t, err, redlock.ErrWrongKind)
					if err == nil {
						require.NoError(t, got.Unlock(bg()))
					}
				} else {
					require.Error(t, err, "granted on a key held by %s", h.kind)
					require.Nil(t, got)
					require.ErrorIs(t, err, redlock.ErrNotObtained)
					assert.ErrorIs(t, err, redlock.ErrWrongKind)
					assert.ErrorContains(t, err, h.says)
					assert.NotContains(t, err.Error(), "WRONGTYPE")
					assert.NotErrorIs(t, err, context.DeadlineExceeded, "refused at once, not by its deadline")
					assert.Less(t, took, 5*time.Second, "refused at once")
				}
				c.WaitIdle()
				require.NoError(t, l.Extend(bg(), 10*time.Second), "the holder's lock is untouched")
				require.NoError(t, l.Unlock(bg()))
			})
		}
	}
}

// Status reports every kind truthfully: what the key holds, on how many
// nodes, and for a lock its token.
func TestRealStatusEveryKind(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 3)
	c := newClient(t, pools)
	for _, h := range heldKinds {
		t.Run(h.kind, func(t *testing.T) {
			key := "status-" + h.kind
			l, err := h.take(c, key)
			require.NoError(t, err)
			c.WaitIdle()
			st, err := c.Status(bg(), key)
			require.NoError(t, err)
			assert.Equal(t, h.kind, st.Kind)
			assert.True(t, st.Held, "%+v", st)
			assert.Equal(t, 3, st.Holders)
			assert.Equal(t, 3, st.Answered)
			assert.Greater(t, st.TTL, 5*time.Second)
			for _, n := range st.Nodes {
				assert.NoError(t, n.Err)
				assert.Equal(t, 1, n.Leases)
			}
			if h.kind == "lock" {
				assert.Equal(t, l.Token(), st.Token)
			} else {
				assert.Empty(t, st.Token)
			}
			require.NoError(t, l.Unlock(bg()))
			c.WaitIdle() // Unlock returns at the majority
			st, err = c.Status(bg(), key)
			require.NoError(t, err)
			assert.False(t, st.Held)
			assert.Empty(t, st.Kind, "free after Unlock")
		})
	}
}

package redlocktest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
	"github.com/redlockgo/redlock/redlocktest"
)

// acceptCall is one entry point of the table: it runs the call and returns
// its error (the lock, when obtained, is given back).
type acceptCall func(ctx context.Context, c *redlock.Client, key string, ttl time.Duration) error

var acceptCalls = []struct {
	name string
	call acceptCall
}{
	{"TryLock", func(ctx context.Context, c *redlock.Client, key string, ttl time.Duration) error {
		return unlocked(ctx)(c.TryLock(ctx, key, ttl))
	}},
	{"TryLock WithAutoExtend", func(ctx context.Context, c *redlock.Client, key string, ttl time.Duration) error {
		return unlocked(ctx)(c.TryLock(ctx, key, ttl, redlock.WithAutoExtend(0)))
	}},
	{"Lock WithFencing", func(ctx context.Context, c *redlock.Client, key string, ttl time.Duration) error {
		return unlocked(ctx)(c.Lock(ctx, key, ttl, redlock.WithFencing()))
	}},
	{"Do", func(ctx context.Context, c *redlock.Client, key string, ttl time.Duration) error {
		return c.Do(ctx, key, ttl, func(context.Context) error { return nil })
	}},
	{"Lead", func(ctx context.Context, c *redlock.Client, key string, ttl time.Duration) error {
		return c.Lead(ctx, key, "me", ttl, func(context.Context) error { return nil })
	}},
}

// unlocked gives back a lock a call obtained and returns the call's error.
func unlocked(ctx context.Context) func(*redlock.Lock, error) error {
	return func(l *redlock.Lock, err error) error {
		if err == nil {
			_ = l.Unlock(ctx)
		}
		return err
	}
}

// refusal returns err's text when err refused the call's arguments (before
// any node was called), "" when the call was accepted: it succeeded, or
// failed at the nodes (not obtained, lost, its context ended).
func refusal(err error) string {
	for _, outcome := range []error{redlock.ErrNotObtained, redlock.ErrLockLost, redlock.ErrNotHeld,
		redlock.ErrNotReleased, redlock.ErrNodeTimeout, context.DeadlineExceeded, context.Canceled} {
		if errors.Is(err, outcome) {
			return ""
		}
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// A kit Client accepts every TTL and option a Client over real Redis
// accepts, and refuses the rest with the same error: the short TTLs of
// Lock, Do and Lead (a 1s TTL kept alive was refused by the kit's former
// 500ms node timeout, "ttl 1s is too short to auto-extend with node
// timeout 500ms", and accepted by redlock.New), with the library's
// defaults and with a node timeout the caller sets.
func TestKitAcceptsWhatRealRedisAccepts(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.NoPersistence)
	pools := make([]pool.Pool, len(servers))
	for i, s := range servers {
		p, err := pool.FromURL(s.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		pools[i] = p
	}
	nodes := redlocktest.New(t, 3)
	ttls := []time.Duration{0, time.Millisecond, 3 * time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond,
		500 * time.Millisecond, time.Second, 1500 * time.Millisecond, 2 * time.Second, 10 * time.Second}
	for _, opts := range []struct {
		name string
		opts []redlock.Option
	}{
		{"defaults", nil},
		{"WithNodeTimeout(500ms)", []redlock.Option{redlock.WithNodeTimeout(500 * time.Millisecond)}},
	} {
		real, err := redlock.New(pools, opts.opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = real.Close() })
		kit := nodes.Client(opts.opts...)
		for _, call := range acceptCalls {
			for _, ttl := range ttls {
				name := fmt.Sprintf("%s/%s/%v", opts.name, call.name, ttl)
				key := "accept:" + name
				want, got := refusal(run(call.call, real, key, ttl)), refusal(run(call.call, kit, key, ttl))
				if got != want {
					t.Errorf("%s: the kit's refusal %q, a real Client's %q", name, got, want)
				}
			}
		}
	}
}

// run runs call on c. A call accepted with a TTL too short to be obtained
// retries until its context ends, so that context is short: a refusal
// comes at once.
func run(call acceptCall, c *redlock.Client, key string, ttl time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	return call(ctx, c, key, ttl)
}

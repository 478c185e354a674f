package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
	"github.com/redlockgo/redlock/redlocktest"
)

// heldListener is a node whose Client listener cannot open until the test
// closes open: the Client's subscription there is not confirmed yet, as
// for a new Client whose listener is still connecting when its first
// blocked call registers as a watcher.
type heldListener struct {
	pool.Pool
	open <-chan struct{}
}

func (p heldListener) Listen(ctx context.Context) (pool.Listener, error) {
	select {
	case <-p.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return p.Pool.(pool.Notifier).Listen(ctx)
}

// withHeldListeners returns pools whose listeners open when open closes.
func withHeldListeners(pools []pool.Pool, open <-chan struct{}) []pool.Pool {
	out := make([]pool.Pool, len(pools))
	for i, p := range pools {
		out[i] = heldListener{Pool: p, open: open}
	}
	return out
}

// deafCase is a blocked call that the Unlock of a lock held elsewhere must
// wake: hold takes that lock on key, wait blocks on key (retry: its
// strategy, whose delays no test waits out).
type deafCase struct {
	name string
	hold func(ctx context.Context, c *redlock.Client, key string) (*redlock.Lock, error)
	wait func(ctx context.Context, c *redlock.Client, key string, retry redlock.LockOption) (*redlock.Lock, error)
}

const deafTTL = 10 * time.Second

func holdLock(ctx context.Context, c *redlock.Client, key string) (*redlock.Lock, error) {
	return c.TryLock(ctx, key, deafTTL)
}

var deafCases = []deafCase{
	{"RLock", holdLock,
		func(ctx context.Context, c *redlock.Client, key string, retry redlock.LockOption) (*redlock.Lock, error) {
			return c.RLock(ctx, key, deafTTL, retry)
		}},
	{"AcquirePermit",
		func(ctx context.Context, c *redlock.Client, key string) (*redlock.Lock, error) {
			return c.TryAcquirePermit(ctx, key, 1, deafTTL)
		},
		func(ctx context.Context, c *redlock.Client, key string, retry redlock.LockOption) (*redlock.Lock, error) {
			return c.AcquirePermit(ctx, key, 1, deafTTL, retry)
		}},
	{"LockAll", holdLock,
		func(ctx context.Context, c *redlock.Client, key string, retry redlock.LockOption) (*redlock.Lock, error) {
			return c.LockAll(ctx, []string{key, key + "/other"}, deafTTL, retry)
		}},
	{"Lock", holdLock, // its waiter's deaf timer: the same promise
		func(ctx context.Context, c *redlock.Client, key string, retry redlock.LockOption) (*redlock.Lock, error) {
			return c.Lock(ctx, key, deafTTL, retry)
		}},
}

// TestWakeUpMadeBeforeTheSubscriptionIsNotLost: a blocked call registers
// as a watcher while its Client's subscription on the nodes is not
// confirmed, and the holder's Unlock publishes the wake-up then, to
// nobody. Once the subscription is confirmed, the call must try again at
// once (as Lock's waiter does for its grants), not at its next retry, an
// hour away.
func TestWakeUpMadeBeforeTheSubscriptionIsNotLost(t *testing.T) {
	hour := redlock.WithRetry(redlock.ConstantBackoff(time.Hour))
	for _, tc := range deafCases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				nodes := redlocktest.New(t, 3)
				holder := nodes.Client()
				open := make(chan struct{})
				waiter, err := redlock.New(withHeldListeners(nodes.Pools(), open)) // a kit Client's defaults
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = waiter.Close() })

				l, err := tc.hold(ctx, holder, "k")
				if err != nil {
					t.Fatal(err)
				}
				got := make(chan error, 1)
				go func() {
					w, err := tc.wait(ctx, waiter, "k", hour)
					if err == nil {
						err = w.Unlock(ctx)
					}
					got <- err
				}()
				synctest.Wait() // refused on every node, registered there, paused
				if err := l.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
				close(open) // the listeners connect and subscribe now

				// On the bubble's clock: the retry is 30 to 60 minutes away.
				select {
				case err := <-got:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(time.Minute):
					t.Fatalf("%s still waiting a minute after its subscription was confirmed: "+
						"the wake-up published before it was lost", tc.name)
				}
			})
		})
	}
}

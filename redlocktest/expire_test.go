package redlocktest_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redlockgo/redlock/redlock"
	"github.com/redlockgo/redlock/redlocktest"
)

// TestExpireEndsEveryKind expires a key under each kind of hold, kept alive
// with WithAutoExtend: each holder's Done closes with ErrLockLost at its
// next extension, and the key is free for new holders at once.
func TestExpireEndsEveryKind(t *testing.T) {
	const ttl = 2 * time.Second // extended every ttl/3
	ctx := context.Background()
	extend := redlock.WithAutoExtend(0)
	kinds := []struct {
		name string
		take func(c *redlock.Client) ([]*redlock.Lock, error)
		// next takes k after Expire; nil means take again.
		next func(c *redlock.Client) ([]*redlock.Lock, error)
	}{
		{name: "exclusive", take: func(c *redlock.Client) ([]*redlock.Lock, error) {
			l, err := c.TryLock(ctx, "k", ttl, extend)
			return []*redlock.Lock{l}, err
		}},
		{name: "fenced", take: func(c *redlock.Client) ([]*redlock.Lock, error) {
			l, err := c.TryLock(ctx, "k", ttl, extend, redlock.WithFencing())
			return []*redlock.Lock{l}, err
		}},
		{name: "readers", take: func(c *redlock.Client) ([]*redlock.Lock, error) {
			r1, err1 := c.TryRLock(ctx, "k", ttl, extend)
			r2, err2 := c.TryRLock(ctx, "k", ttl, extend)
			return []*redlock.Lock{r1, r2}, errors.Join(err1, err2)
		}},
		{name: "permits", take: func(c *redlock.Client) ([]*redlock.Lock, error) {
			p1, err1 := c.TryAcquirePermit(ctx, "k", 2, ttl, extend)
			p2, err2 := c.TryAcquirePermit(ctx, "k", 2, ttl, extend)
			return []*redlock.Lock{p1, p2}, errors.Join(err1, err2)
		}},
		{name: "multi-lock", take: func(c *redlock.Client) ([]*redlock.Lock, error) {
			l, err := c.TryLockAll(ctx, []string{"j", "k"}, ttl, extend)
			return []*redlock.Lock{l}, err
		}, next: func(c *redlock.Client) ([]*redlock.Lock, error) {
			// j stays taken until its holder, lost, lets it expire.
			l, err := c.TryLockAll(ctx, []string{"k", "l"}, ttl, extend)
			return []*redlock.Lock{l}, err
		}},
	}
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			bothClocks(t, func(t *testing.T, _ bool) {
				nodes := redlocktest.New(t, 3)
				holders := nodes.Client()
				locks, err := kind.take(holders)
				if err != nil {
					t.Fatal(err)
				}
				nodes.Expire("k")
				// New holders of the same kind come in at once; the old
				// ones must not come back to life through them.
				again := kind.take
				if kind.next != nil {
					again = kind.next
				}
				next, err := again(nodes.Client())
				if err != nil {
					t.Fatalf("key not free after Expire: %v", err)
				}
				for _, l := range locks {
					wantLost(t, l)
				}
				for _, l := range next {
					if err := l.Err(); err != nil {
						t.Fatalf("new holder lost: %v", err)
					}
					unlock(t, l)
				}
			})
		})
	}
}

// TestExpireDo: Do's context ends with a cause wrapping ErrLockLost, and
// Do reports the loss.
func TestExpireDo(t *testing.T) {
	bothClocks(t, func(t *testing.T, _ bool) {
		nodes := redlocktest.New(t, 3)
		c := nodes.Client()
		var cause error
		err := c.Do(context.Background(), "job", 2*time.Second, func(ctx context.Context) error {
			nodes.Expire("job")
			select {
			case <-ctx.Done():
				cause = context.Cause(ctx)
				return cause
			case <-time.After(liveness):
				return errors.New("fn's context not canceled after Expire")
			}
		})
		if !errors.Is(cause, redlock.ErrLockLost) {
			t.Fatalf("context.Cause = %v, want one wrapping ErrLockLost", cause)
		}
		if !errors.Is(err, redlock.ErrLockLost) {
			t.Fatalf("Do = %v, want one wrapping ErrLockLost", err)
		}
	})
}

// TestExpireKeepsFence: the next holder's fence is above the expired
// holder's, on every kind that fences.
func TestExpireKeepsFence(t *testing.T) {
	bothClocks(t, func(t *testing.T, bubble bool) {
		ctx := context.Background()
		nodes := redlocktest.New(t, 3)
		c := nodes.Client()
		var last uint64
		for i, take := range []func() (*redlock.Lock, error){
			func() (*redlock.Lock, error) { return c.TryLock(ctx, "k", time.Minute, redlock.WithFencing()) },
			func() (*redlock.Lock, error) { return c.TryLock(ctx, "k", time.Minute, redlock.WithFencing()) },
			func() (*redlock.Lock, error) { return c.TryRLock(ctx, "k", time.Minute, redlock.WithFencing()) },
			func() (*redlock.Lock, error) {
				return c.TryLockAll(ctx, []string{"k", "m"}, time.Minute, redlock.WithFencing())
			},
		} {
			l, err := take()
			if err != nil {
				t.Fatalf("holder %d: %v", i, err)
			}
			if l.Fence() <= last {
				t.Fatalf("holder %d: fence %d, not above %d", i, l.Fence(), last)
			}
			last = l.Fence()
			for _, k := range l.Keys() {
				// Or a late command could bring a hold back after Expire.
				everywhere(t, nodes, k, true, bubble)
			}
			nodes.Expire("k")
			nodes.Expire("m")
		}
	})
}

// TestExpireLockDelay: a lock-delay starts at Expire, as at an expiry. In a
// bubble only, to wait the delay out on the fake clock.
func TestExpireLockDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const delay = 5 * time.Second
		nodes := redlocktest.New(t, 3)
		a := nodes.Client(redlock.WithLockDelay(delay))
		b := nodes.Client(redlock.WithLockDelay(delay))
		if _, err := a.TryLock(ctx, "k", time.Minute); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the lock landed on every node
		nodes.Expire("k")
		_, err := b.TryLock(ctx, "k", time.Minute)
		if !errors.Is(err, redlock.ErrLockDelay) {
			t.Fatalf("TryLock after Expire: %v, want ErrLockDelay", err)
		}
		time.Sleep(delay - time.Second)
		if _, err := b.TryLock(ctx, "k", time.Minute); !errors.Is(err, redlock.ErrLockDelay) {
			t.Fatalf("TryLock within the delay: %v, want ErrLockDelay", err)
		}
		time.Sleep(time.Second)
		l, err := b.TryLock(ctx, "k", time.Minute)
		if err != nil {
			t.Fatalf("TryLock after the delay: %v", err)
		}
		unlock(t, l)
	})
}

// TestKeysExpireByTheClock: a holder that vanishes without Unlock frees the
// key after its TTL, as on Redis. In a bubble, where the clock is exact.
func TestKeysExpireByTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		nodes := redlocktest.New(t, 3)
		a, b := nodes.Client(), nodes.Client()
		if _, err := a.TryLock(ctx, "k", 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := a.TryRLock(ctx, "r", 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := a.TryAcquirePermit(ctx, "p", 1, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		time.Sleep(9 * time.Second)
		_, err := b.TryLock(ctx, "k", 10*time.Second)
		wantTaken(t, err)
		time.Sleep(time.Second)
		for _, take := range []func() (*redlock.Lock, error){
			func() (*redlock.Lock, error) { return b.TryLock(ctx, "k", 10*time.Second) },
			func() (*redlock.Lock, error) { return b.TryLock(ctx, "r", 10*time.Second) },
			func() (*redlock.Lock, error) { return b.TryAcquirePermit(ctx, "p", 1, 10*time.Second) },
		} {
			l, err := take()
			if err != nil {
				t.Fatalf("after the TTL: %v", err)
			}
			unlock(t, l)
		}
	})
}

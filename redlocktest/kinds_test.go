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

// waiting is the retry schedule of a blocked call. In a bubble it is one
// no test waits out: a waiter that returns was woken by a release, not by
// its own retry, and the fake clock shows it exactly (no time passes). On
// the real clock it is the default schedule: a blocked RLock, AcquirePermit
// or LockAll there sometimes misses the wake-up of the release and takes
// the key at its next retry (seen on TCP miniredis with pool.FromURL too,
// so in the lock, not the kit).
func waiting(bubble bool) redlock.LockOption {
	if bubble {
		return redlock.WithRetry(redlock.ExponentialBackoff(time.Hour, time.Hour))
	}
	return redlock.WithRetry(redlock.ExponentialBackoff(25*time.Millisecond, 250*time.Millisecond))
}

// woken checks that a blocked call, started at start, was woken by a
// release: in a bubble no fake time passed, which a retry would have taken.
func woken(t *testing.T, bubble bool, start time.Time) {
	t.Helper()
	if d := time.Since(start); bubble && d != 0 {
		t.Fatalf("waiter returned after %v of fake time: woken by a retry, not by the release", d)
	}
}

// settle lets a waiter block before the release that should wake it: in a
// bubble synctest.Wait says when it is blocked; on the real clock it may
// still be on its way, and then finds the key free, which the test allows.
func settle(bubble bool) {
	if bubble {
		synctest.Wait()
	}
}

func TestExclusive(t *testing.T) {
	bothClocks(t, func(t *testing.T, bubble bool) {
		ctx := context.Background()
		nodes := redlocktest.New(t, 3)
		a, b := nodes.Client(), nodes.Client()

		l, err := a.TryLock(ctx, "job", 10*time.Second, redlock.WithFencing())
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.TryLock(ctx, "job", 10*time.Second)
		wantTaken(t, err)

		start := time.Now()
		waiter := async(func() error {
			w, err := b.Lock(ctx, "job", 10*time.Second, waiting(bubble), redlock.WithFencing())
			if err != nil {
				return err
			}
			if w.Fence() <= l.Fence() {
				t.Errorf("waiter's fence %d not above the first holder's %d", w.Fence(), l.Fence())
			}
			return released(t, w.Unlock(ctx))
		})
		settle(bubble)
		unlock(t, l)
		if err := await(t, "Lock", waiter); err != nil {
			t.Fatal(err)
		}
		woken(t, bubble, start)

		ran := false
		err = a.Do(ctx, "job", 10*time.Second, func(ctx context.Context) error {
			ran = true
			_, err := b.TryLock(ctx, "job", 10*time.Second)
			wantTaken(t, err)
			return nil
		})
		if err != nil || !ran {
			t.Fatalf("Do: ran %v, err %v", ran, err)
		}
		if st, err := b.Status(ctx, "job"); err != nil || st.Held {
			t.Fatalf("after Do: Status %+v, %v; want free", st, err)
		}
	})
}

// TestAutoExtend holds a lock for three TTLs. It runs in a bubble only: on
// the fake clock the sleep costs nothing and the extensions are exact.
func TestAutoExtend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		nodes := redlocktest.New(t, 3)
		a, b := nodes.Client(), nodes.Client()
		l, err := a.TryLock(ctx, "job", 2*time.Second, redlock.WithAutoExtend(0))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(6 * time.Second)
		if err := l.Err(); err != nil {
			t.Fatalf("lost while extended: %v", err)
		}
		_, err = b.TryLock(ctx, "job", 2*time.Second)
		wantTaken(t, err)
		unlock(t, l)
		<-l.Done()
		if err := l.Err(); !errors.Is(err, redlock.ErrNotHeld) || errors.Is(err, redlock.ErrLockLost) {
			t.Fatalf("after Unlock: Err() = %v, want ErrNotHeld only", err)
		}
	})
}

func TestReaders(t *testing.T) {
	bothClocks(t, func(t *testing.T, bubble bool) {
		ctx := context.Background()
		nodes := redlocktest.New(t, 3)
		a, b := nodes.Client(), nodes.Client()

		r1, err := a.TryRLock(ctx, "catalog", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := b.TryRLock(ctx, "catalog", 10*time.Second)
		if err != nil {
			t.Fatalf("second reader: %v", err)
		}
		_, err = b.TryLock(ctx, "catalog", 10*time.Second)
		wantTaken(t, err)
		unlock(t, r1)
		_, err = b.TryLock(ctx, "catalog", 10*time.Second)
		wantTaken(t, err) // r2 still reads
		unlock(t, r2)

		w, err := a.TryLock(ctx, "catalog", 10*time.Second)
		if err != nil {
			t.Fatalf("writer after the readers left: %v", err)
		}
		start := time.Now()
		reader := async(func() error {
			r, err := b.RLock(ctx, "catalog", 10*time.Second, waiting(bubble))
			if err != nil {
				return err
			}
			return released(t, r.Unlock(ctx))
		})
		settle(bubble)
		unlock(t, w)
		if err := await(t, "RLock", reader); err != nil {
			t.Fatal(err)
		}
		woken(t, bubble, start)
	})
}

func TestPermits(t *testing.T) {
	bothClocks(t, func(t *testing.T, bubble bool) {
		ctx := context.Background()
		nodes := redlocktest.New(t, 3)
		a, b := nodes.Client(), nodes.Client()

		p1, err := a.TryAcquirePermit(ctx, "exports", 2, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		p2, err := b.TryAcquirePermit(ctx, "exports", 2, 10*time.Second)
		if err != nil {
			t.Fatalf("second permit: %v", err)
		}
		_, err = b.TryAcquirePermit(ctx, "exports", 2, 10*time.Second)
		wantTaken(t, err)

		start := time.Now()
		third := async(func() error {
			p, err := b.AcquirePermit(ctx, "exports", 2, 10*time.Second, waiting(bubble))
			if err != nil {
				return err
			}
			return released(t, p.Unlock(ctx))
		})
		settle(bubble)
		unlock(t, p1)
		if err := await(t, "AcquirePermit", third); err != nil {
			t.Fatal(err)
		}
		woken(t, bubble, start)
		unlock(t, p2)
	})
}

func TestMultiLock(t *testing.T) {
	bothClocks(t, func(t *testing.T, bubble bool) {
		ctx := context.Background()
		nodes := redlocktest.New(t, 3)
		a, b := nodes.Client(), nodes.Client()
		keys := []string{"account:alice", "account:bob"}

		l, err := a.TryLockAll(ctx, keys, 10*time.Second, redlock.WithFencing())
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.TryLock(ctx, "account:bob", 10*time.Second)
		wantTaken(t, err)
		_, err = b.TryLockAll(ctx, []string{"account:bob", "account:carol"}, 10*time.Second)
		wantTaken(t, err)
		if c, err := b.TryLock(ctx, "account:carol", 10*time.Second); err != nil {
			t.Fatalf("a refused multi-lock left account:carol taken: %v", err)
		} else {
			unlock(t, c)
		}

		start := time.Now()
		waiter := async(func() error {
			w, err := b.LockAll(ctx, []string{"account:bob", "account:carol"}, 10*time.Second, waiting(bubble))
			if err != nil {
				return err
			}
			return released(t, w.Unlock(ctx))
		})
		settle(bubble)
		unlock(t, l)
		if err := await(t, "LockAll", waiter); err != nil {
			t.Fatal(err)
		}
		woken(t, bubble, start)
	})
}

// TestReentry: an owner's holds on in-memory nodes count as on Redis; the
// last Unlock wakes a blocked Lock of another owner; Expire ends them all.
func TestReentry(t *testing.T) {
	bothClocks(t, func(t *testing.T, bubble bool) {
		ctx := context.Background()
		nodes := redlocktest.New(t, 3)
		a, b := nodes.Client(), nodes.Client()
		job := redlock.WithOwner("job-1")

		outer, err := a.TryLock(ctx, "acct", 10*time.Second, job, redlock.WithFencing())
		if err != nil {
			t.Fatal(err)
		}
		inner, err := b.Lock(ctx, "acct", 10*time.Second, job, redlock.WithFencing())
		if err != nil {
			t.Fatalf("re-entry by the same owner in another Client: %v", err)
		}
		if inner.Fence() != outer.Fence() {
			t.Errorf("re-entered fence %d, want the owner's %d", inner.Fence(), outer.Fence())
		}
		_, err = b.TryLock(ctx, "acct", 10*time.Second, redlock.WithOwner("job-2"))
		wantTaken(t, err)

		start := time.Now()
		waiter := async(func() error {
			l, err := b.Lock(ctx, "acct", 10*time.Second, waiting(bubble), redlock.WithOwner("job-2"))
			if err != nil {
				return err
			}
			return released(t, l.Unlock(ctx))
		})
		settle(bubble)
		unlock(t, inner)
		if st, err := a.Status(ctx, "acct"); err != nil || !st.Held || st.Token != "o:job-1" {
			t.Fatalf("after one of two Unlocks: Status %+v, %v; want held by o:job-1", st, err)
		}
		unlock(t, outer)
		if err := await(t, "Lock", waiter); err != nil {
			t.Fatal(err)
		}
		woken(t, bubble, start)

		l, err := a.TryLock(ctx, "gone", 10*time.Second, job)
		if err != nil {
			t.Fatal(err)
		}
		nodes.Expire("gone")
		if _, err := a.TryLock(ctx, "gone", 10*time.Second, job); err != nil {
			t.Fatalf("after Expire: %v, want a first hold", err)
		}
		if err := l.Extend(ctx, time.Second); !errors.Is(err, redlock.ErrNotHeld) {
			t.Fatalf("Extend of the expired hold: %v, want ErrNotHeld", err)
		}
	})
}

package redlock_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redlockgo/redlock/redlock"
	"github.com/redlockgo/redlock/redlocktest"
)

// A Lock with one retry, 30 to 60ms later, behind a 20ms lock held by
// another owner, takes the key at that retry: it expired there 10 to 40ms
// earlier. The holder was served by the queues (its Lock waited), so its
// ticket is earlier than the waiter's, and the waiter yields to it (its
// rounds take no free key). Before the fix (issue 60) the retry's answers,
// "free" from every node to a round that could not take, ended the wait:
// refused, "held by another owner", on every node. In a synctest bubble
// over the kit's nodes: the keys expire on the virtual clock, and no load
// moves a retry.
func TestLockTakesAnExpiredKeyAtItsOnlyRetryBehindAQueuedHolder(t *testing.T) {
	for _, n := range []int{3, 5} {
		for _, retry := range []time.Duration{30 * time.Millisecond, 45 * time.Millisecond, 60 * time.Millisecond} {
			t.Run(fmt.Sprintf("%d nodes, retry after %v", n, retry), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					ctx := t.Context()
					nodes := redlocktest.New(t, n)
					first, holder, waiter := nodes.Client(), nodes.Client(), nodes.Client()
					l, err := first.TryLock(ctx, "k", time.Second)
					if err != nil {
						t.Fatal(err)
					}
					held := make(chan *redlock.Lock, 1)
					go func() {
						h, err := holder.Lock(ctx, "k", 20*time.Millisecond)
						if err != nil {
							t.Errorf("the holder's Lock: %v", err)
						}
						held <- h
					}()
					synctest.Wait()                  // the holder waits in the queues
					time.Sleep(5 * time.Millisecond) // the waiter's ticket comes later
					if err := l.Unlock(ctx); err != nil {
						t.Fatal(err)
					}
					h := <-held // handed the key by the release, for 20ms
					if h == nil {
						return
					}
					once := redlock.RetryFunc(func(k int) (time.Duration, bool) { return retry, k == 1 })
					start := time.Now()
					w, err := waiter.Lock(ctx, "k", time.Second, redlock.WithRetry(once))
					if err != nil {
						t.Fatalf("the holder's 20ms lock expired before the only retry, %v after the call, was due: %v", retry, err)
					}
					if took := time.Since(start); took < retry {
						t.Fatalf("taken %v after the call, before its only retry (%v) and the holder's expiry", took, retry)
					}
					if !time.Now().After(h.Until()) {
						t.Fatalf("taken while the holder's lock was valid (until %v, now %v)", h.Until(), time.Now())
					}
					if err := w.Unlock(ctx); err != nil {
						t.Fatal(err)
					}
				})
			})
		}
	}
}

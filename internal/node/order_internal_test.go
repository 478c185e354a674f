package node

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
)

func TestOrderRunsCallsOfOneTokenAndOneKeyInTheOrderTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var o Order
		first := o.Take("k", "tok", true, 0, 3)
		second := o.Take("k", "tok", false, 0, 3)       // same token
		third := o.Take("k", "other", true, 0, 3)       // same key, a write
		elsewhere := o.Take("k", "tok", true, 1, 3)     // another node: its own order
		unrelated := o.Take("k2", "other2", true, 0, 3) // nothing in common
		var mu sync.Mutex
		var ran []string
		run := func(name string, s Slot) chan struct{} {
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = s.Run(t.Context(), func(context.Context) (bool, error) {
					mu.Lock()
					ran = append(ran, name)
					mu.Unlock()
					return true, nil
				})
			}()
			return done
		}
		d3 := run("third", third)
		d2 := run("second", second)
		<-run("elsewhere", elsewhere)
		<-run("unrelated", unrelated)
		synctest.Wait()
		if len(ran) != 2 {
			t.Fatalf("calls after the first on its node must wait for it, ran %v", ran)
		}
		<-run("first", first)
		<-d2
		<-d3
		if ran[2] != "first" {
			t.Fatalf("order %v", ran)
		}
		if len(o.chains) != 0 {
			t.Fatalf("finished chains must be forgotten, %d left", len(o.chains))
		}
	})
}

func TestOrderWaitEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var o Order
		first := o.Take("k", "tok", true, 0, 1)
		second := o.Take("k", "tok", true, 0, 1)
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() {
			_, err := second.Run(ctx, func(context.Context) (bool, error) { return true, nil })
			errc <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-errc; err != context.Canceled {
			t.Fatalf("err %v, want context.Canceled", err)
		}
		_, _ = first.Run(t.Context(), func(context.Context) (bool, error) { return true, nil })
		if len(o.chains) != 0 {
			t.Fatalf("%d chains left", len(o.chains))
		}
	})
}

// A call whose wait ended with its context does not let the next call
// overtake the one it waited for: a waiter's give-back stuck behind a slow
// fence read, a round cut while queued behind the give-back, and the next
// round (same token) must still wait for the give-back, or the give-back's
// delete lands after that round took the key and removes it (make sim
// found two leaders at once that way).
func TestOrderWaitsForTheCallsACutCallWaitedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var o Order
		slow := o.Take("k", "tok", false, 0, 1)    // a fence read, in flight
		giveBack := o.Take("k", "tok", true, 0, 1) // waits for it
		cut := o.Take("k", "tok", false, 0, 1)     // a round, cut while waiting
		next := o.Take("k", "tok", false, 0, 1)    // the next round
		release := make(chan struct{})
		var mu sync.Mutex
		var ran []string
		run := func(name string, ctx context.Context, s Slot, block bool) chan struct{} {
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = s.Run(ctx, func(context.Context) (bool, error) {
					mu.Lock()
					ran = append(ran, name)
					mu.Unlock()
					if block {
						<-release
					}
					return true, nil
				})
			}()
			return done
		}
		dSlow := run("slow", t.Context(), slow, true)
		dGive := run("give-back", t.Context(), giveBack, false)
		ctx, cancel := context.WithCancel(t.Context())
		dCut := run("cut", ctx, cut, false)
		synctest.Wait()
		cancel()
		<-dCut
		dNext := run("next", t.Context(), next, false)
		synctest.Wait()
		mu.Lock()
		got := append([]string(nil), ran...)
		mu.Unlock()
		if len(got) != 1 {
			t.Errorf("while the first call works only it may run, ran %v", got)
		}
		close(release)
		<-dSlow
		<-dGive
		<-dNext
		if len(ran) != 3 || ran[1] != "give-back" || ran[2] != "next" {
			t.Fatalf("order %v, want slow, give-back, next", ran)
		}
		if len(o.chains) != 0 {
			t.Fatalf("%d chains left", len(o.chains))
		}
	})
}

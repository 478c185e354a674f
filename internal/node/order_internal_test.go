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

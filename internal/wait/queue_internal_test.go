package wait

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redlockgo/redlock/internal/scripts"
)

// fakeLockCall is a Lock call's Queue: the node calls of fakeQueue, and
// Won refusing the first refuse grants (a fence that failed).
type fakeLockCall struct {
	fakeQueue
	channels []string
	refuse   int
	won      []time.Time
	lost     []error
}

var errUnconfirmed = errors.New("unconfirmed")

func (f *fakeLockCall) Hear(channels []string) { f.channels = channels }

func (f *fakeLockCall) Won(_ context.Context, _ *Waiter, until time.Time) error {
	f.won = append(f.won, until)
	if len(f.won) <= f.refuse {
		return errUnconfirmed
	}
	return nil
}

func (f *fakeLockCall) Lost(_ context.Context, _ *Waiter, err error) error {
	f.lost = append(f.lost, err)
	return errors.Join(errRefused, err)
}

// TestHubWaitGivesBackUnconfirmedGrants: grants on a majority that Won
// cannot confirm are given back on every node and the waiter waits on,
// asking every node again; grants heard meanwhile reach the waiter (it is
// registered for its key), and once Won confirms, Wait returns nil.
func TestHubWaitGivesBackUnconfirmedGrants(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testHub(t, nil, newFakeListener(), newFakeListener(), newFakeListener())
		f := &fakeLockCall{refuse: 1}
		w := newTestWaiter(&f.fakeQueue, Constant(time.Hour))
		w.nodes = f
		out := make(chan error, 1)
		go func() { out <- h.Wait(t.Context(), w, "k", f, time.Millisecond, true) }()
		synctest.Wait()
		if want := []string{h.Grants.Channel(), h.Grants.Channel(), h.Grants.Channel()}; !slices.Equal(f.channels, want) {
			t.Fatalf("heard on %q, want the Client's channel on every node", f.channels)
		}
		for _, r := range f.take() {
			answer(w, r, scripts.EnqueueSet, 0, "")
		}
		synctest.Wait()
		if len(f.won) != 1 || len(f.given) != 1 || !slices.Equal(f.given[0], []int{0, 1, 2}) {
			t.Fatalf("won %d times, gave back %v; want one refused confirmation, given back on every node", len(f.won), f.given)
		}
		rounds := f.take() // waiting on: the waiter asks again at once, where no round is in flight
		if len(rounds) < 2 || rounds[0].seq != 2 {
			t.Fatalf("rounds %v after the refusal, want round 2 to the nodes that answered round 1", rounds)
		}
		answer(w, rounds[0], scripts.EnqueueQueued, 0, "")
		answer(w, rounds[1], scripts.EnqueueQueued, 0, "")
		h.Grants.Deliver(w.Token(), 0, rounds[0].seq) // heard: the waiter is registered
		h.Grants.Deliver(w.Token(), 1, rounds[1].seq)
		if err := <-out; err != nil || len(f.won) != 2 || len(f.lost) != 0 {
			t.Fatalf("Wait = %v after %d confirmations, %d losses; want nil on the second", err, len(f.won), len(f.lost))
		}
		if !h.Busy.Is("k", time.Now()) {
			t.Fatal("a wait that found the key held did not mark it contended")
		}
		h.Grants.mu.Lock()
		defer h.Grants.mu.Unlock()
		if len(h.Grants.inbox) != 0 {
			t.Fatal("the waiter is still registered after Wait")
		}
	})
}

// TestHubWaitLost: a wait the strategy ends reports Lost's error for the
// Waiter's, and confirms nothing.
func TestHubWaitLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testHub(t, nil, newFakeListener(), newFakeListener(), newFakeListener())
		f := &fakeLockCall{}
		w := newTestWaiter(&f.fakeQueue, Limit(Constant(time.Hour), 0))
		w.nodes = f
		out := make(chan error, 1)
		go func() { out <- h.Wait(t.Context(), w, "k", f, 0, false) }()
		synctest.Wait()
		for _, r := range f.take() {
			answer(w, r, scripts.EnqueueQueued, 0, "")
		}
		err := <-out
		if !errors.Is(err, errRefused) || !errors.Is(err, ErrGaveUp) || len(f.lost) != 1 || len(f.won) != 0 {
			t.Fatalf("Wait = %v (lost %v, won %d); want Lost's error for ErrGaveUp", err, f.lost, len(f.won))
		}
	})
}

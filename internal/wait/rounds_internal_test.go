package wait

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/internal/node"
	"github.com/redlockgo/redlock/internal/scripts"
)

// The waiter's rounds: retries to every node, quiet nodes at heartbeats, checks after a minority's grants, splits and deaf nodes.

// A retry asks every node, quiet ones too (on dd8673a it asked only the
// node that was not listening): a key that vanished without a release is
// found at the next retry, whatever the holder's TTL.
func TestWaiterAsksEveryNodeAtEachRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{deaf: map[int]bool{2: true}}
		w := newTestWaiter(f, every(100*time.Millisecond))
		start(w, t.Context(), 100*time.Millisecond, true)
		synctest.Wait()
		for _, r := range f.take() {
			w.replies <- Reply{Node: r.node, Seq: r.seq, Code: scripts.EnqueueQueued, Holder: "1", HolderTTL: 5 * time.Second}
		}
		synctest.Wait()
		time.Sleep(100*time.Millisecond - time.Millisecond)
		synctest.Wait()
		if got := f.take(); len(got) != 0 {
			t.Fatalf("before retry 1 nothing is due: got %v", nodesOf(got))
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := nodesOf(f.take()); !slices.Equal(got, []int{0, 1, 2}) {
			t.Fatalf("retry 1 must ask every node, the quiet ones too, got %v", got)
		}
		if w.retries != 1 {
			t.Fatalf("retries %d, want 1", w.retries)
		}
	})
}

// A holder's key that vanished early (its TTL was 5s; the key is gone
// after 100ms, with no release) is taken at the next retry, not at the
// heartbeat or the key's expiry.
func TestWaiterTakesAKeyThatVanishedEarlyAtTheNextRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		w := newTestWaiter(f, every(100*time.Millisecond))
		begun := time.Now()
		out := start(w, t.Context(), 100*time.Millisecond, true)
		synctest.Wait()
		for _, r := range f.take() {
			w.replies <- Reply{Node: r.node, Seq: r.seq, Code: scripts.EnqueueQueued, Holder: "1", HolderTTL: 5 * time.Second}
		}
		time.Sleep(100 * time.Millisecond) // the key is DELeted meanwhile
		synctest.Wait()
		got := f.take()
		if len(got) != 3 {
			t.Fatalf("retry 1 must ask every node, got %v", nodesOf(got))
		}
		for _, r := range got {
			answer(w, r, scripts.EnqueueSet, 0, "")
		}
		r := <-out
		if r.err != nil {
			t.Fatalf("the vanished key was not taken: %v", r.err)
		}
		if took := time.Since(begun); took != 100*time.Millisecond {
			t.Fatalf("taken after %v, want at retry 1 (100ms); the heartbeat is %v", took, w.heartbeat)
		}
	})
}

// A waiter behind a holder that the queues served, with an earlier
// ticket, yields: its rounds take no free key. When the holder's key runs
// out without a release and a yielding round finds it free, the waiter
// does not yield any more and takes the key at once, with a round of its
// own, even when the yielding round was the strategy's last retry. Before
// (issue 60), the wait ended on that retry's answers: refused, "held by
// another owner", by every node, although the key had expired there.
func TestWaiterTakesAFreeKeyAtOnceWhenItStopsYielding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		once := Func(func(n int) (time.Duration, bool) { return 60 * time.Millisecond, n == 1 })
		w := newTestWaiter(f, once)
		d, ok := once.NextDelay(1)
		out := start(w, t.Context(), d, ok)
		synctest.Wait()
		for _, r := range f.take() { // held for 20ms more by an earlier ticket
			w.replies <- Reply{Node: r.node, Seq: r.seq, Code: scripts.EnqueueQueued, Holder: "1 holder", HolderTTL: 20 * time.Millisecond}
		}
		time.Sleep(60 * time.Millisecond) // the only retry: the key ran out 40ms ago
		synctest.Wait()
		retry := f.take()
		if len(retry) != 3 {
			t.Fatalf("the retry went to %v, want every node", nodesOf(retry))
		}
		for _, r := range retry {
			if r.mayTake {
				t.Fatalf("the premise: a waiter behind an earlier ticket yields, and its retry takes no free key: %v", r)
			}
			w.replies <- Reply{Node: r.node, Seq: r.seq, Code: scripts.EnqueueQueued} // free
		}
		synctest.Wait()
		select {
		case r := <-out:
			t.Fatalf("the wait ended on the answers of a round that could not take the free key: %v", r.err)
		default:
		}
		again := f.take()
		if got := nodesOf(again); !slices.Equal(got, []int{0, 1, 2}) {
			t.Fatalf("rounds went to %v once the key was found free, want every node", got)
		}
		for _, r := range again {
			if !r.mayTake {
				t.Fatalf("the round after the yield may take the key: %v", r)
			}
			answer(w, r, scripts.EnqueueSet, 0, "")
		}
		if r := <-out; r.err != nil {
			t.Fatalf("the free key was taken on every node, yet: %v", r.err)
		}
	})
}

func TestWaiterGivesUpOnTimeAfterItsLastRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		w := newTestWaiter(f, Limit(every(100*time.Millisecond), 2))
		begun := time.Now()
		out := start(w, t.Context(), 100*time.Millisecond, true)
		rounds := 0
		for {
			synctest.Wait()
			for _, r := range f.take() {
				rounds++
				w.replies <- Reply{Node: r.node, Seq: r.seq, Code: scripts.EnqueueQueued, Holder: "1", HolderTTL: 5 * time.Second}
			}
			synctest.Wait()
			select {
			case r := <-out:
				if !errors.Is(r.err, ErrGaveUp) {
					t.Fatalf("err %v, want ErrGaveUp", r.err)
				}
				if took := time.Since(begun); took != 200*time.Millisecond {
					t.Fatalf("gave up after %v, want the two retries' 200ms", took)
				}
				if rounds != 9 {
					t.Fatalf("%d node calls, want 9: the first round and two retries to each of 3 nodes", rounds)
				}
				return
			default:
			}
			time.Sleep(time.Millisecond)
		}
	})
}

func TestWaiterHoldingAMinorityAsksEveryNodeAtEachRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		w := newTestWaiter(f, every(100*time.Millisecond))
		start(w, t.Context(), 100*time.Millisecond, true)
		synctest.Wait()
		for _, r := range f.take() {
			if r.node == 0 {
				w.replies <- Reply{Node: r.node, Seq: r.seq, Code: scripts.EnqueueSet}
				continue
			}
			// Held by a waiter with a later ticket: no reason to yield.
			w.replies <- Reply{Node: r.node, Seq: r.seq, Code: scripts.EnqueueQueued, Holder: "9" + strconv.FormatInt(w.ticket, 10), HolderTTL: 5 * time.Second}
		}
		synctest.Wait()
		time.Sleep(w.check) // the check round after a grant on a minority
		synctest.Wait()
		for _, r := range f.take() {
			w.replies <- Reply{Node: r.node, Seq: r.seq, Code: scripts.EnqueueQueued, Holder: "9" + strconv.FormatInt(w.ticket, 10), HolderTTL: 5 * time.Second}
		}
		synctest.Wait()
		time.Sleep(100*time.Millisecond - w.check)
		synctest.Wait()
		if got := nodesOf(f.take()); len(got) != 2 {
			t.Fatalf("a waiter in a split must ask the nodes it lacks at each retry, got %v", got)
		}
	})
}

// A split with a silent node in it: we hold two of five nodes, an earlier
// waiter holds two, and the fifth does not answer. Neither can complete a
// majority; the later waiter (us) gives its grants back at once, and the
// earlier one never does.
func TestWaiterInASplitWithASilentNodeYieldsOnlyToAnEarlierTicket(t *testing.T) {
	for _, tc := range []struct {
		name   string
		holder string // the other waiter's ticket
		yields bool
	}{
		{name: "the other is earlier: give back", holder: "1", yields: true},
		{name: "the other is later: keep", holder: "99999999999999999", yields: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeQueue{}
				w := newWaiter(f, clock.Real{}, 5, 3, "me", testTTL, 102*time.Millisecond, every(time.Second), 500*time.Millisecond)
				ctx, cancel := context.WithCancel(t.Context())
				out := start(w, ctx, time.Second, true)
				synctest.Wait()
				answerSplit := func(rounds []sentRound) {
					for _, r := range rounds {
						switch r.node {
						case 0, 1:
							answer(w, r, scripts.EnqueueSet, 0, "")
						case 2, 3:
							answer(w, r, scripts.EnqueueQueued, 0, tc.holder)
						default:
							w.replies <- Reply{Node: r.node, Seq: r.seq, Err: node.ErrTimeout}
						}
					}
				}
				answerSplit(f.take())
				synctest.Wait()
				time.Sleep(w.check) // the check asks the nodes we lack again
				synctest.Wait()
				answerSplit(f.take())
				synctest.Wait()
				f.mu.Lock()
				given := f.given
				f.mu.Unlock()
				if tc.yields && (len(given) != 1 || len(given[0]) != 2) {
					t.Fatalf("gave back %v; want nodes 0 and 1 at once", given)
				}
				if !tc.yields && len(given) != 0 {
					t.Fatalf("the earliest waiter gave back %v", given)
				}
				cancel()
				<-out
			})
		})
	}
}

// expectCheckAt asserts, in a synctest bubble, that the waiter sends no
// round for after less a nanosecond, and then its check, to want nodes.
func expectCheckAt(t *testing.T, f *fakeQueue, after time.Duration, want int) {
	t.Helper()
	time.Sleep(after - time.Nanosecond)
	synctest.Wait()
	if got := f.take(); len(got) != 0 {
		t.Fatalf("checked before %v: %v", after, got)
	}
	time.Sleep(time.Nanosecond)
	synctest.Wait()
	if got := nodesOf(f.take()); len(got) != want {
		t.Fatalf("the check at %v asked %v; want %d nodes that have not granted", after, got, want)
	}
}

// The check after a grant on a minority comes three round trips later (the
// slowest this waiter measured), not at the 50ms cap: a split among waiters
// costs a few round trips.
func TestWaiterChecksAfterThreeRoundTrips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		w := newTestWaiter(f, every(time.Second))
		start(w, t.Context(), time.Second, true)
		synctest.Wait()
		first := f.take()
		time.Sleep(2 * time.Millisecond) // the nodes answer after 2ms
		later := "9" + strconv.FormatInt(w.ticket, 10)
		for _, r := range first {
			if r.node == 0 {
				answer(w, r, scripts.EnqueueSet, 0, "")
				continue
			}
			w.replies <- Reply{Node: r.node, Seq: r.seq, Code: scripts.EnqueueQueued, Holder: later, HolderTTL: 5 * time.Second}
		}
		synctest.Wait()
		expectCheckAt(t, f, 6*time.Millisecond, 2) // the two nodes that have not granted
		if w.check <= 6*time.Millisecond {
			t.Fatalf("the cap (%v) must exceed the measured check for this test to mean anything", w.check)
		}
	})
}

// A slow minority does not slow the check: with one node of five answering
// in 20ms and the others in 2ms, the check after a grant on a minority
// comes three of the majority's round trips later (6ms), not three of the
// slow node's (capped at the node timeout's quarter).
func TestWaiterChecksAfterTheMajoritysRoundTrips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		w := newWaiter(f, clock.Real{}, 5, 3, "me", testTTL, 102*time.Millisecond, every(time.Second), 500*time.Millisecond)
		start(w, t.Context(), time.Second, true)
		synctest.Wait()
		first := f.take()
		later := "9" + strconv.FormatInt(w.ticket, 10)
		queued := func(node int) {
			for _, r := range first {
				if r.node == node {
					w.replies <- Reply{Node: r.node, Seq: r.seq, Code: scripts.EnqueueQueued, Holder: later, HolderTTL: 5 * time.Second}
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
		for node := range 4 {
			queued(node)
		}
		time.Sleep(18 * time.Millisecond)
		queued(4)
		synctest.Wait()
		w.Deliver(Grant{Node: 0, Seq: first[0].seq}) // the holder released node 0 to us
		synctest.Wait()
		expectCheckAt(t, f, 6*time.Millisecond, 4) // the four nodes that have not granted
		if w.check <= 6*time.Millisecond {
			t.Fatalf("the cap (%v) must exceed the majority's check for this test to mean anything", w.check)
		}
	})
}

// A node that went silent just now has not timed out yet: its round is
// still in flight. Once it is later than the check, it counts as lost, so a
// later waiter in a split with it yields at the check, not at the node
// timeout; and it rejoins at once the queues it gave keys back to.
func TestWaiterCountsANodeLateBeyondTheCheckAsLostAndRejoinsAfterYielding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		w := newWaiter(f, clock.Real{}, 5, 3, "me", testTTL, 102*time.Millisecond, every(time.Second), 500*time.Millisecond)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		out := start(w, ctx, time.Second, true)
		synctest.Wait()
		answerSplit := func(rounds []sentRound) {
			for _, r := range rounds {
				switch r.node {
				case 0, 1:
					answer(w, r, scripts.EnqueueSet, 0, "")
				case 2, 3:
					answer(w, r, scripts.EnqueueQueued, 0, "1") // an earlier ticket
				} // node 4 never answers
			}
		}
		answerSplit(f.take())
		synctest.Wait()
		time.Sleep(w.check) // the answers took no time: no round trip measured
		synctest.Wait()
		answerSplit(f.take())
		synctest.Wait()
		f.mu.Lock()
		given := f.given
		f.mu.Unlock()
		if len(given) != 1 || !slices.Equal(given[0], []int{0, 1}) {
			t.Fatalf("gave back %v; want nodes 0 and 1 at the check, before node 4 times out", given)
		}
		rejoin := nodesOf(f.take())
		if !slices.Contains(rejoin, 0) || !slices.Contains(rejoin, 1) {
			t.Fatalf("after giving back, rounds went to %v; want nodes 0 and 1 at once", rejoin)
		}
		cancel()
		<-out
	})
}

// TestWaiterAsksADeafNodeOnceItListens has every node's subscription
// unconfirmed when the first round goes (a new Client's listeners still
// connecting): a release then is announced to nobody. Once the nodes
// listen, the waiter asks them at once (within MaxDeafPoll), not at the
// heartbeat, and then stays quiet; a node that never listens costs no
// round before the heartbeat.
func TestWaiterAsksADeafNodeOnceItListens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{deaf: map[int]bool{0: true, 1: true, 2: true}}
		w := newTestWaiter(f, Constant(time.Hour))
		begun := time.Now()
		start(w, t.Context(), time.Hour, true)
		synctest.Wait()
		queued := func(rounds []sentRound) {
			for _, r := range rounds {
				w.replies <- Reply{Node: r.node, Seq: r.seq, Code: scripts.EnqueueQueued, Holder: "1", HolderTTL: 5 * time.Second}
			}
		}
		queued(f.take())
		time.Sleep(time.Second) // the listeners are still connecting
		synctest.Wait()
		if got := f.take(); len(got) != 0 {
			t.Fatalf("no node listens yet: no round before the heartbeat, got %v", nodesOf(got))
		}
		f.mu.Lock()
		f.deaf = map[int]bool{2: true} // nodes 0 and 1 confirmed; node 2 never does
		f.mu.Unlock()
		confirmed := time.Now()
		var got []sentRound
		for len(got) == 0 {
			time.Sleep(time.Millisecond)
			synctest.Wait()
			got = f.take()
		}
		if took := time.Since(confirmed); took > MaxDeafPoll {
			t.Fatalf("the catch-up round went %v after the confirmation, want at most %v", took, MaxDeafPoll)
		}
		if nodes := nodesOf(got); !slices.Equal(nodes, []int{0, 1}) {
			t.Fatalf("the catch-up round must go to the nodes that listen now only, got %v", nodes)
		}
		if w.retries != 0 {
			t.Fatalf("a catch-up round is not a retry: retries %d", w.retries)
		}
		queued(got)
		time.Sleep(w.heartbeat - time.Since(begun) - time.Millisecond)
		synctest.Wait()
		if got := f.take(); len(got) != 0 {
			t.Fatalf("before the heartbeat, caught-up nodes are quiet and the deaf one is not asked: got %v", nodesOf(got))
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := nodesOf(f.take()); !slices.Equal(got, []int{2}) {
			t.Fatalf("at the heartbeat only the node that does not listen is asked, got %v", got)
		}
	})
}

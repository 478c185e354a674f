package redlock

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/internal/scripts"
)

// fakeQueue records a waiter's node calls; the test answers them. It runs
// inside a synctest bubble, where time is virtual and synctest.Wait tells
// when the waiter is blocked.
type fakeQueue struct {
	mu     sync.Mutex
	rounds []sentRound
	given  [][]int
	deaf   map[int]bool // nodes whose grants would not be announced
}

type sentRound struct {
	node, seq int
	mayTake   bool
}

func (f *fakeQueue) round(w *waiter, i, seq int, mayTake bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rounds = append(f.rounds, sentRound{i, seq, mayTake})
}

func (f *fakeQueue) giveBack(w *waiter, nodes []int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.given = append(f.given, nodes)
}

func (f *fakeQueue) listening(i int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.deaf[i]
}

func (f *fakeQueue) take() []sentRound {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.rounds
	f.rounds = nil
	return r
}

const testTTL = 10 * time.Second

func newTestWaiter(f *fakeQueue, retry RetryStrategy) *waiter {
	return newWaiter(f, clock.Real{}, 3, 2, "me", testTTL, 100*time.Millisecond+2*time.Millisecond, retry, 500*time.Millisecond)
}

type waitResult struct {
	until time.Time
	err   error
}

// start runs w.wait in the bubble and returns its outcome channel.
func start(w *waiter, ctx context.Context, delay time.Duration, retry bool) <-chan waitResult {
	out := make(chan waitResult, 1)
	go func() {
		until, err := w.wait(ctx, nil, delay, retry)
		out <- waitResult{until, err}
	}()
	return out
}

func answer(w *waiter, r sentRound, code int64, grantSeq int, holder string) {
	w.replies <- reply{node: r.node, seq: r.seq, code: code, grantSeq: grantSeq, holder: holder}
}

func TestWaiterWinsOnAMajorityOfGrantsCountedFromTheRoundsSendTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		w := newTestWaiter(f, ConstantBackoff(time.Hour))
		sent := time.Now()
		out := start(w, t.Context(), time.Hour, true)
		synctest.Wait()
		rounds := f.take()
		if len(rounds) != 3 {
			t.Fatalf("the first round goes to every node at once, got %v", rounds)
		}
		for _, r := range rounds {
			answer(w, r, scripts.EnqueueQueued, 0, "")
		}
		time.Sleep(3 * time.Second) // the holder works; grants come later
		w.deliver(grant{node: 0, seq: 1})
		synctest.Wait()
		select {
		case r := <-out:
			t.Fatalf("won on one grant of three: %v", r)
		default:
		}
		w.deliver(grant{node: 2, seq: 1})
		r := <-out
		if r.err != nil {
			t.Fatal(r.err)
		}
		want := sent.Add(testTTL - w.drift)
		if !r.until.Equal(want) {
			t.Fatalf("until %v, want the round's send time plus ttl less drift %v", r.until, want)
		}
	})
}

func TestWaiterDropsStaleGrantsAndKeepsNewerOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		w := newTestWaiter(f, ExponentialBackoff(time.Millisecond, 10*time.Millisecond))
		out := start(w, t.Context(), time.Millisecond, true)
		synctest.Wait()
		first := f.take()
		// Node 0 granted after round 1, and says so before round 1's reply
		// "queued" arrives: the grant stands.
		w.deliver(grant{node: 0, seq: 1})
		synctest.Wait()
		answer(w, first[0], scripts.EnqueueQueued, 0, "")
		answer(w, first[1], scripts.EnqueueQueued, 0, "")
		answer(w, first[2], scripts.EnqueueQueued, 0, "")
		time.Sleep(2 * time.Millisecond) // retry 1
		synctest.Wait()
		for _, r := range f.take() {
			if r.node == 0 {
				t.Fatalf("node 0's grant was lost: it got round %v", r)
			}
			if r.node == 1 {
				answer(w, r, scripts.EnqueueQueued, 0, "") // round 2: queued
			}
		}
		synctest.Wait()
		// A grant of node 1 naming round 1 came from before round 2 found
		// it queued: stale.
		w.deliver(grant{node: 1, seq: 1})
		synctest.Wait()
		select {
		case r := <-out:
			t.Fatalf("counted a stale grant: %v", r)
		default:
		}
		w.deliver(grant{node: 1, seq: 2})
		if r := <-out; r.err != nil {
			t.Fatal(r.err)
		}
	})
}

func TestWaiterYieldsToAnEarlierTicketHoldingAMajority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		w := newTestWaiter(f, ExponentialBackoff(time.Millisecond, 10*time.Millisecond))
		ctx, cancel := context.WithCancel(t.Context())
		out := start(w, ctx, time.Millisecond, true)
		synctest.Wait()
		first := f.take()
		answer(w, first[0], scripts.EnqueueSet, 0, "") // node 0 was free: ours
		earlier := "1"                                 // a ticket before ours
		answer(w, first[1], scripts.EnqueueQueued, 0, earlier)
		answer(w, first[2], scripts.EnqueueQueued, 0, earlier)
		synctest.Wait()
		if len(f.given) != 0 {
			t.Fatalf("yielded on answers older than its grant: %v", f.given)
		}
		// The check asks nodes 1 and 2 again: both held by the earlier one.
		time.Sleep(w.check)
		synctest.Wait()
		for _, r := range f.take() {
			answer(w, r, scripts.EnqueueQueued, 0, earlier)
		}
		synctest.Wait()
		if len(f.given) != 1 || len(f.given[0]) != 1 || f.given[0][0] != 0 {
			t.Fatalf("gave back %v, want node 0", f.given)
		}
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		for _, r := range f.take() {
			if r.mayTake {
				t.Fatalf("a yielding waiter takes no free key: %v", r)
			}
		}
		cancel()
		if r := <-out; r.err != context.Canceled {
			t.Fatalf("got %v", r.err)
		}
	})
}

func TestWaiterFollowsTheRetryStrategyAndStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		var asked []int
		s := LimitRetry(RetryFunc(func(n int) (time.Duration, bool) {
			asked = append(asked, n)
			return time.Duration(n) * time.Second, true
		}), 2)
		w := newTestWaiter(f, s)
		d, ok := s.NextDelay(1)
		began := time.Now()
		out := start(w, t.Context(), d, ok)
		var times []time.Duration
		for {
			synctest.Wait()
			rounds := f.take()
			if len(rounds) > 0 {
				times = append(times, time.Since(began))
			}
			for _, r := range rounds {
				answer(w, r, scripts.EnqueueQueued, 0, "")
			}
			select {
			case r := <-out:
				if r.err != ErrNotObtained {
					t.Fatalf("got %v", r.err)
				}
				want := []time.Duration{0, time.Second, 3 * time.Second}
				if len(times) != len(want) {
					t.Fatalf("rounds at %v, want %v", times, want)
				}
				for i := range want {
					if times[i] != want[i] {
						t.Fatalf("rounds at %v, want %v", times, want)
					}
				}
				if len(asked) != 2 || asked[0] != 1 || asked[1] != 2 {
					t.Fatalf("asked %v", asked)
				}
				return
			default:
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

func TestWaiterReturnsAtOnceWhenItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		w := newTestWaiter(f, ConstantBackoff(time.Hour))
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		began := time.Now()
		out := start(w, ctx, time.Hour, true) // no node ever answers
		r := <-out
		if r.err != context.DeadlineExceeded || time.Since(began) != 100*time.Millisecond {
			t.Fatalf("got %v after %v", r.err, time.Since(began))
		}
	})
}

// every retries after exactly d, for tests that count time.
func every(d time.Duration) RetryStrategy {
	return RetryFunc(func(int) (time.Duration, bool) { return d, true })
}

func nodesOf(rounds []sentRound) []int {
	var out []int
	for _, r := range rounds {
		out = append(out, r.node)
	}
	return out
}

func TestWaiterSkipsQuietNodesOnRetriesButNotForever(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{deaf: map[int]bool{2: true}}
		w := newTestWaiter(f, every(100*time.Millisecond))
		start(w, t.Context(), 100*time.Millisecond, true)
		synctest.Wait()
		for _, r := range f.take() {
			w.replies <- reply{node: r.node, seq: r.seq, code: scripts.EnqueueQueued, holder: "1", holderTTL: 5 * time.Second}
		}
		synctest.Wait()
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		got := f.take()
		if len(got) != 1 || got[0].node != 2 {
			t.Fatalf("retry 1 must go to the node whose grants would not be announced only, got %v", nodesOf(got))
		}
		if w.retries != 1 {
			t.Fatalf("a retry answered from what the waiter knows still counts: retries %d", w.retries)
		}
		w.replies <- reply{node: 2, seq: got[0].seq, code: scripts.EnqueueQueued, holder: "1", holderTTL: 5 * time.Second}
		// Nodes 0 and 1 stay quiet until their lease needs a refresh: the
		// heartbeat (a third of the lease) after their last round.
		var quietUntil time.Duration
		for elapsed := 100 * time.Millisecond; ; {
			time.Sleep(100 * time.Millisecond)
			elapsed += 100 * time.Millisecond
			synctest.Wait()
			got := f.take()
			for _, r := range got {
				w.replies <- reply{node: r.node, seq: r.seq, code: scripts.EnqueueQueued, holder: "1", holderTTL: 5 * time.Second}
			}
			if len(got) > 1 {
				quietUntil = elapsed
				break
			}
			if elapsed > w.heartbeat+time.Second {
				t.Fatalf("no round to the quiet nodes within %v: the heartbeat is %v", elapsed, w.heartbeat)
			}
		}
		if quietUntil < w.heartbeat || quietUntil > w.heartbeat+100*time.Millisecond {
			t.Fatalf("quiet nodes asked again after %v, want at the heartbeat %v", quietUntil, w.heartbeat)
		}
	})
}

func TestWaiterAsksAgainOnceTheHoldersKeyRunsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		w := newTestWaiter(f, every(100*time.Millisecond))
		start(w, t.Context(), 100*time.Millisecond, true)
		synctest.Wait()
		for _, r := range f.take() {
			w.replies <- reply{node: r.node, seq: r.seq, code: scripts.EnqueueQueued, holder: "1", holderTTL: 250 * time.Millisecond}
		}
		synctest.Wait()
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if got := f.take(); len(got) != 0 {
			t.Fatalf("the holder's key lives on and the nodes announce releases: no round expected, got %v", nodesOf(got))
		}
		time.Sleep(200 * time.Millisecond) // past the key's expiry: a free key must be taken
		synctest.Wait()
		if got := f.take(); len(got) != 3 {
			t.Fatalf("the holder's key ran out: every node must be asked, got %v", nodesOf(got))
		}
	})
}

func TestWaiterGivesUpOnTimeWhenEveryNodeIsQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		w := newTestWaiter(f, LimitRetry(every(100*time.Millisecond), 2))
		begun := time.Now()
		out := start(w, t.Context(), 100*time.Millisecond, true)
		synctest.Wait()
		for _, r := range f.take() {
			w.replies <- reply{node: r.node, seq: r.seq, code: scripts.EnqueueQueued, holder: "1", holderTTL: 5 * time.Second}
		}
		r := <-out
		if !errors.Is(r.err, ErrNotObtained) {
			t.Fatalf("err %v, want ErrNotObtained", r.err)
		}
		if took := time.Since(begun); took != 200*time.Millisecond {
			t.Fatalf("gave up after %v, want the two retries' 200ms", took)
		}
		if got := f.take(); len(got) != 0 {
			t.Fatalf("quiet nodes asked: %v", nodesOf(got))
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
				w.replies <- reply{node: r.node, seq: r.seq, code: scripts.EnqueueSet}
				continue
			}
			// Held by a waiter with a later ticket: no reason to yield.
			w.replies <- reply{node: r.node, seq: r.seq, code: scripts.EnqueueQueued, holder: "9" + strconv.FormatInt(w.ticket, 10), holderTTL: 5 * time.Second}
		}
		synctest.Wait()
		time.Sleep(w.check) // the check round after a grant on a minority
		synctest.Wait()
		for _, r := range f.take() {
			w.replies <- reply{node: r.node, seq: r.seq, code: scripts.EnqueueQueued, holder: "9" + strconv.FormatInt(w.ticket, 10), holderTTL: 5 * time.Second}
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
							w.replies <- reply{node: r.node, seq: r.seq, err: ErrNodeTimeout}
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
			w.replies <- reply{node: r.node, seq: r.seq, code: scripts.EnqueueQueued, holder: later, holderTTL: 5 * time.Second}
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
					w.replies <- reply{node: r.node, seq: r.seq, code: scripts.EnqueueQueued, holder: later, holderTTL: 5 * time.Second}
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
		w.deliver(grant{node: 0, seq: first[0].seq}) // the holder released node 0 to us
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
// listen, the waiter asks them at once (within maxDeafPoll), not at the
// heartbeat, and then stays quiet; a node that never listens costs no
// round before the heartbeat.
func TestWaiterAsksADeafNodeOnceItListens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{deaf: map[int]bool{0: true, 1: true, 2: true}}
		w := newTestWaiter(f, ConstantBackoff(time.Hour))
		begun := time.Now()
		start(w, t.Context(), time.Hour, true)
		synctest.Wait()
		queued := func(rounds []sentRound) {
			for _, r := range rounds {
				w.replies <- reply{node: r.node, seq: r.seq, code: scripts.EnqueueQueued, holder: "1", holderTTL: 5 * time.Second}
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
		if took := time.Since(confirmed); took > maxDeafPoll {
			t.Fatalf("the catch-up round went %v after the confirmation, want at most %v", took, maxDeafPoll)
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

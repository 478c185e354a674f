package wait

import (
	"context"
	"fmt"
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

func (f *fakeQueue) Round(w *Waiter, i, seq int, mayTake bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rounds = append(f.rounds, sentRound{i, seq, mayTake})
}

func (f *fakeQueue) GiveBack(w *Waiter, nodes []int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.given = append(f.given, nodes)
}

func (f *fakeQueue) Listening(i int) bool {
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

// newWaiter builds a Waiter as the redlock package does, with the check
// timer's bound at the engine's contended grace for nodeTimeout: a quarter
// of it, at most 50ms.
func newWaiter(nodes Nodes, clk clock.Clock, n, quorum int, token string, ttl, drift time.Duration, retry Strategy, nodeTimeout time.Duration) *Waiter {
	return New(nodes, Config{Clock: clk, N: n, Quorum: quorum, Token: token, TTL: ttl, Drift: drift, Retry: retry,
		Check:   max(min(nodeTimeout/4, 50*time.Millisecond), time.Millisecond),
		Delayed: func(left time.Duration) error { return fmt.Errorf("lock-delay: %v left", left) }})
}

func newTestWaiter(f *fakeQueue, retry Strategy) *Waiter {
	return newWaiter(f, clock.Real{}, 3, 2, "me", testTTL, 100*time.Millisecond+2*time.Millisecond, retry, 500*time.Millisecond)
}

type waitResult struct {
	until time.Time
	err   error
}

// start runs w.wait in the bubble and returns its outcome channel.
func start(w *Waiter, ctx context.Context, delay time.Duration, retry bool) <-chan waitResult {
	out := make(chan waitResult, 1)
	go func() {
		until, err := w.Wait(ctx, nil, delay, retry)
		out <- waitResult{until, err}
	}()
	return out
}

func answer(w *Waiter, r sentRound, code int64, grantSeq int, holder string) {
	w.replies <- Reply{Node: r.node, Seq: r.seq, Code: code, GrantSeq: grantSeq, Holder: holder}
}

func TestWaiterWinsOnAMajorityOfGrantsCountedFromTheRoundsSendTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		w := newTestWaiter(f, Constant(time.Hour))
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
		w.Deliver(Grant{Node: 0, Seq: 1})
		synctest.Wait()
		select {
		case r := <-out:
			t.Fatalf("won on one grant of three: %v", r)
		default:
		}
		w.Deliver(Grant{Node: 2, Seq: 1})
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
		w := newTestWaiter(f, Exponential(time.Millisecond, 10*time.Millisecond))
		out := start(w, t.Context(), time.Millisecond, true)
		synctest.Wait()
		first := f.take()
		// Node 0 granted after round 1, and says so before round 1's reply
		// "queued" arrives: the grant stands.
		w.Deliver(Grant{Node: 0, Seq: 1})
		synctest.Wait()
		answer(w, first[0], scripts.EnqueueQueued, 0, "")
		answer(w, first[1], scripts.EnqueueQueued, 0, "")
		answer(w, first[2], scripts.EnqueueQueued, 0, "")
		time.Sleep(MinDelay) // retry 1: a delay under the floor counts as MinDelay
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
		w.Deliver(Grant{Node: 1, Seq: 1})
		synctest.Wait()
		select {
		case r := <-out:
			t.Fatalf("counted a stale grant: %v", r)
		default:
		}
		w.Deliver(Grant{Node: 1, Seq: 2})
		if r := <-out; r.err != nil {
			t.Fatal(r.err)
		}
	})
}

func TestWaiterYieldsToAnEarlierTicketHoldingAMajority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		w := newTestWaiter(f, Exponential(time.Millisecond, 10*time.Millisecond))
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

// Two waiters can draw one ticket (arrival times in microseconds). The
// queues order them by token, and so do the waiters: the one whose token
// sorts later gives way when the other holds too many nodes, and the other
// does not. Before, neither counted the other as earlier; split 2-2
// beside a blackholed fifth node (a loaded run of the spec suite), both
// waited for the keys' TTL.
func TestWaiterWithTheSameTicketYieldsByToken(t *testing.T) {
	for _, tc := range []struct {
		holder string // the other waiter's token
		yields bool
	}{
		{"a", true},   // "a" < "me": the holder is earlier
		{"zz", false}, // "zz" > "me": we are earlier
	} {
		t.Run(tc.holder, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeQueue{}
				w := newTestWaiter(f, Exponential(time.Millisecond, 10*time.Millisecond))
				ctx, cancel := context.WithCancel(t.Context())
				out := start(w, ctx, time.Millisecond, true)
				synctest.Wait()
				holder := fmt.Sprintf("%d %s", w.Ticket(), tc.holder) // our ticket, its token
				first := f.take()
				answer(w, first[0], scripts.EnqueueSet, 0, "") // node 0 was free: ours
				answer(w, first[1], scripts.EnqueueQueued, 0, holder)
				answer(w, first[2], scripts.EnqueueQueued, 0, holder)
				// The check asks nodes 1 and 2 again: both held by the other.
				time.Sleep(w.check)
				synctest.Wait()
				for _, r := range f.take() {
					answer(w, r, scripts.EnqueueQueued, 0, holder)
				}
				synctest.Wait()
				gave := len(f.given) == 1 && len(f.given[0]) == 1 && f.given[0][0] == 0
				if tc.yields && !gave {
					t.Fatalf("holder %q, the same ticket, an earlier token: gave back %v, want node 0", holder, f.given)
				}
				if !tc.yields && len(f.given) != 0 {
					t.Fatalf("holder %q, the same ticket, a later token: gave back %v, want nothing", holder, f.given)
				}
				cancel()
				if r := <-out; r.err != context.Canceled {
					t.Fatalf("got %v", r.err)
				}
			})
		})
	}
}

func TestWaiterFollowsTheStrategyAndStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		var asked []int
		s := Limit(Func(func(n int) (time.Duration, bool) {
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
				if r.err != ErrGaveUp {
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
		w := newTestWaiter(f, Constant(time.Hour))
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
func every(d time.Duration) Strategy {
	return Func(func(int) (time.Duration, bool) { return d, true })
}

func nodesOf(rounds []sentRound) []int {
	var out []int
	for _, r := range rounds {
		out = append(out, r.node)
	}
	return out
}

// A retry that falls due while a heartbeat's round is still in flight to
// some nodes (a loaded machine slowed it) sends its own round to them once
// they answer: their answer to the heartbeat, sent before the retry was
// due, may still find the holder's key, which had run out by the retry.
// The strategy's only retry must not fail on it (TestRealRetryStrategy-
// OneRetryAfterExpiry failed so, 1 run in 20 of the redlock package).
func TestRetryDueDuringARoundGetsItsOwnRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		const ttl = 90 * time.Millisecond // a heartbeat of 30ms
		once := Func(func(n int) (time.Duration, bool) { return 60 * time.Millisecond, n == 1 })
		w := newWaiter(f, clock.Real{}, 3, 2, "me", ttl, 2*time.Millisecond, once, 50*time.Millisecond)
		d, ok := once.NextDelay(1)
		out := start(w, t.Context(), d, ok)
		synctest.Wait()
		for _, r := range f.take() { // the first round: the key is held
			answer(w, r, scripts.EnqueueQueued, 0, "")
		}
		time.Sleep(30 * time.Millisecond)
		synctest.Wait()
		heartbeat := f.take()
		if got := nodesOf(heartbeat); len(got) != 3 {
			t.Fatalf("the heartbeat's round went to %v, want every node", got)
		}
		answer(w, heartbeat[0], scripts.EnqueueQueued, 0, "") // nodes 1 and 2 answer late
		time.Sleep(30 * time.Millisecond)
		synctest.Wait()
		retry := f.take()
		if got := nodesOf(retry); len(got) != 1 || got[0] != 0 {
			t.Fatalf("the retry went to %v, want node 0 only (1 and 2 are busy)", got)
		}
		answer(w, retry[0], scripts.EnqueueSet, 0, "") // the key ran out: node 0 grants
		synctest.Wait()
		// The heartbeat's answers, from before the key ran out.
		answer(w, heartbeat[1], scripts.EnqueueQueued, 0, "")
		answer(w, heartbeat[2], scripts.EnqueueQueued, 0, "")
		synctest.Wait()
		select {
		case r := <-out:
			t.Fatalf("the wait ended on answers to the round before its retry: %v", r.err)
		default:
		}
		owed := f.take()
		if got := nodesOf(owed); len(got) != 2 || got[0] == 0 || got[1] == 0 {
			t.Fatalf("after their late answers, rounds went to %v, want nodes 1 and 2", got)
		}
		answer(w, owed[0], scripts.EnqueueSet, 0, "")
		if r := <-out; r.err != nil {
			t.Fatalf("the retry's own rounds granted the key, yet: %v", r.err)
		}
	})
}

// A node whose round in flight at the last retry fails (a silent node's
// timeout) is owed no round: it said nothing of the key, and another round
// would hold the wait's end back by a node timeout more.
func TestRetryOwesNothingToANodeWhoseRoundFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		const ttl = 90 * time.Millisecond // a heartbeat of 30ms
		once := Func(func(n int) (time.Duration, bool) { return 60 * time.Millisecond, n == 1 })
		w := newWaiter(f, clock.Real{}, 3, 2, "me", ttl, 2*time.Millisecond, once, 50*time.Millisecond)
		d, ok := once.NextDelay(1)
		out := start(w, t.Context(), d, ok)
		synctest.Wait()
		for _, r := range f.take() {
			answer(w, r, scripts.EnqueueQueued, 0, "")
		}
		time.Sleep(30 * time.Millisecond)
		synctest.Wait()
		heartbeat := f.take()
		answer(w, heartbeat[0], scripts.EnqueueQueued, 0, "")
		answer(w, heartbeat[1], scripts.EnqueueQueued, 0, "")
		time.Sleep(30 * time.Millisecond) // the last retry: node 2 is busy
		synctest.Wait()
		for _, r := range f.take() {
			answer(w, r, scripts.EnqueueQueued, 0, "")
		}
		w.replies <- Reply{Node: heartbeat[2].node, Seq: heartbeat[2].seq, Err: fmt.Errorf("node timeout")}
		var r waitResult
		select {
		case r = <-out:
		case <-time.After(time.Second): // virtual time: the rounds above are all answered
			t.Fatalf("the wait did not end; rounds since: %v", nodesOf(f.take()))
		}
		if r.err != ErrGaveUp {
			t.Fatalf("got %v, want the wait to give up once every round is in", r.err)
		}
		if rounds := f.take(); len(rounds) != 0 {
			t.Fatalf("rounds went to %v after the failed one", nodesOf(rounds))
		}
	})
}

// A waiter that gave its grants back (Restart, after Won could not confirm
// them) does not count a round's answer "the key holds your token" for a
// grant that followed a round before the give-back: the give-back may
// still be on its way to that node and delete the key under the new lock
// (make sim SEED=1138 and SEED=137 gave two holders at once that way).
func TestWaiterDoesNotCountAGrantItGaveBackWhenALaterRoundReportsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeQueue{}
		w := newTestWaiter(f, Exponential(time.Millisecond, 10*time.Millisecond))
		out := start(w, t.Context(), time.Hour, true)
		synctest.Wait()
		for _, r := range f.take() {
			answer(w, r, scripts.EnqueueSet, 0, "") // round 1 took the key everywhere
		}
		if r := <-out; r.err != nil {
			t.Fatal(r.err)
		}
		w.Restart() // Won failed: the grants go back (Hub.Wait)
		out = start(w, t.Context(), time.Millisecond, true)
		synctest.Wait()
		time.Sleep(MinDelay)
		synctest.Wait()
		rounds := f.take()
		if len(rounds) == 0 {
			t.Fatal("no round after the give-back")
		}
		for _, r := range rounds {
			answer(w, r, scripts.EnqueueGranted, 1, "") // still ours from round 1
		}
		synctest.Wait()
		select {
		case r := <-out:
			t.Fatalf("won again on the grants it gave back: %v", r)
		default:
		}
		// The give-back landed; the next rounds take the key again.
		for range 100 {
			time.Sleep(MinDelay)
			synctest.Wait()
			for _, r := range f.take() {
				answer(w, r, scripts.EnqueueSet, 0, "")
			}
			synctest.Wait()
			select {
			case r := <-out:
				if r.err != nil {
					t.Fatal(r.err)
				}
				return
			default:
			}
		}
		t.Fatal("not won on the rounds that took the key after the give-back")
	})
}

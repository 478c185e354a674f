package redlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
	"github.com/redlockgo/redlock/redlocktest"
)

// failsFirst is a node whose first call fails with errFirst, without
// reaching the server, after delay or, when gate is set, once gate is
// closed; later calls go through. It keeps the identity of the Pool it
// wraps (pool.Identifier).
type failsFirst struct {
	pool.Pool
	delay time.Duration
	gate  <-chan struct{}
	calls atomic.Int32
}

var errFirst = errors.New("connection reset (injected)")

func (f *failsFirst) first() bool { return f.calls.Add(1) == 1 }

func (f *failsFirst) fail(ctx context.Context) error {
	var after <-chan time.Time // nil with a gate: only the gate answers
	if f.gate == nil {
		t := time.NewTimer(f.delay)
		defer t.Stop()
		after = t.C
	}
	select {
	case <-after:
	case <-f.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return errFirst
}

func (f *failsFirst) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if f.first() {
		return false, f.fail(ctx)
	}
	return f.Pool.SetNX(ctx, key, value, ttl)
}

func (f *failsFirst) Eval(ctx context.Context, s *pool.Script, keys []string, args ...any) (any, error) {
	if f.first() {
		return nil, f.fail(ctx)
	}
	return f.Pool.Eval(ctx, s, keys, args...)
}

func (f *failsFirst) Identity() (pool.Identity, bool) { return f.Pool.(pool.Identifier).Identity() }

// A TryLock over five nodes of which three fail their first call makes
// one attempt, and fails: a majority that failed or did not answer is no
// split among contenders, which the settling attempts are for (issue 60).
// One node refuses (another owner's key there) and one agrees. When the
// failures come after the contended grace (a quarter of the node timeout,
// 25ms for a 2s lock), the attempt decides without them, at the grace;
// before the fix it took that for a split, and its next attempt, with the
// three nodes answering again, got the lock. When they come first, the
// refusal is unavailable: more nodes failed than hold the key.
func TestTryLockWithAMajorityFailingMakesOneAttempt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration // before the failing nodes' first answer
	}{
		{"failures after the grace", 30 * time.Millisecond},
		{"failures first", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				nodes := redlocktest.New(t, 5)
				pools := nodes.Pools()
				if _, err := pools[4].(pool.Commander).Do(ctx, "SET", "k", "another owner", "PX", "60000"); err != nil {
					t.Fatal(err)
				}
				for i := range 3 {
					pools[i] = &failsFirst{Pool: pools[i], delay: tc.delay}
				}
				attempts, seen := attemptsOf()
				c, err := redlock.New(pools, attempts)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Close() })

				start := time.Now()
				l, err := c.TryLock(ctx, "k", 2*time.Second)
				took := time.Since(start)
				if err == nil {
					t.Fatalf("obtained after %d attempts, %v after the call: the nodes that failed the first attempt were taken for a split", <-seen, took)
				}
				if !errors.Is(err, redlock.ErrNotObtained) || l != nil {
					t.Fatalf("got %v, want ErrNotObtained", err)
				}
				if n := <-seen; n != 1 {
					t.Fatalf("%d attempts, want one: %v", n, err)
				}
				if took > 30*time.Millisecond {
					t.Fatalf("returned %v after the call, want at the grace (25ms) at the latest: %v", took, err)
				}
				if tc.delay == 0 && !redlock.IsUnavailable(err) {
					t.Fatalf("three of five nodes failed, one holds the key: want unavailable, got %v", err)
				}
			})
		})
	}
}

// Three Clients call TryLock at the same instant, 300 times, on three
// nodes, each call reaching its node after a delay of up to a millisecond
// drawn from a seeded source: some rounds split on their first attempts
// (each Client wins a node, none a majority), and settling inside the
// attempt (up to two more tries, each after a random delay) gives those
// rounds a winner. The test counts the rounds whose first attempts split
// and those that settling left without a winner, and requires at least
// three splits in four settled; never two winners.
func TestSimultaneousTryLocksHaveAWinner(t *testing.T) {
	virtual(t)
	synctest.Test(t, func(t *testing.T) {
		nodes := newBubbleNodes(t, 3)
		nodes.delayCalls(3, time.Millisecond)
		var clients []*redlock.Client
		var attempts []*callAttempts
		for range 3 {
			a := &callAttempts{last: map[string]int{}}
			attempts = append(attempts, a)
			clients = append(clients, newClient(t, nodes.pools, redlock.WithObserver(a)))
		}
		var r splitRounds
		for range 300 {
			won, err := simultaneousRound(clients, "split")
			require.NoError(t, err)
			r.add(won, attempts, "split")
		}
		t.Logf("300 rounds: %d split on their first attempts, %d left without a winner", r.split, r.noWinner)
		assert.Zero(t, r.twoWinners, "two holders at once")
		assert.Greater(t, r.split, 10, "the rounds split: the test exercised settling")
		assert.True(t, r.settledEnough(), "settling left %d of %d split rounds without a winner; it must settle at least three in four", r.noWinner, r.split)
	})
}

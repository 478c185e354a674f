package redlock_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

// Three Clients call TryLock at the same instant, 1,000 times, on three
// real nodes: a split among them (each wins a node, none a majority) is
// settled inside the attempt (up to two more tries, each after a random
// delay), so a round without a winner is rarer than 1 in 1,000. Without
// the settling attempts such rounds came about 1 in 500 on a quiet machine
// and 114 in 1,000 on a loaded one (issue 37).
func TestRealSimultaneousTryLocksHaveAWinner(t *testing.T) {
	// Alone: the rate of rounds without a winner rises with the load (6 in
	// 1,000 in a run beside 12 parallel tests and other builds).
	alone(t)
	_, pools := realNodes(t, 3)
	clients := []*redlock.Client{newClient(t, pools), newClient(t, pools), newClient(t, pools)}
	// 1,000 rounds: ten keys at a time, 100 rounds each, so that the
	// settling delays of one key's rounds overlap the others' (a round's
	// losers wait out up to two delays of up to 50ms: five keys at a time
	// took 6.5s of the package's run alone; ten, 3.5s, with 0, 0, 0 and 1
	// rounds of 1,000 without a winner in four runs beside two CPU hogs).
	const keys, rounds = 10, 100
	var mu sync.Mutex
	noWinner, twoWinners := 0, 0
	var groups sync.WaitGroup
	for k := range keys {
		key := "split" + strconv.Itoa(k)
		groups.Go(func() {
			for range rounds {
				won, err := simultaneousRound(clients, key)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				switch {
				case won == 0:
					noWinner++
				case won > 1:
					twoWinners++
				}
				mu.Unlock()
			}
		})
	}
	groups.Wait()
	assert.Zero(t, twoWinners, "two holders at once")
	// With one settling attempt, 0, 0 and 1 of 1,000 rounds in three
	// CI-equivalent runs had no winner. The rate with two is measured over
	// many runs (docs/performance.md); one run's bound, 3 in 1,000, keeps
	// the test from failing on a rate below 1 in 1,000.
	assert.Less(t, noWinner, 3, "%d of %d rounds had no winner", noWinner, keys*rounds)
	t.Logf("%d rounds, %d without a winner", keys*rounds, noWinner)
}

// simultaneousRound has every Client call TryLock on key at once, unlocks
// what was won, and returns how many won.
func simultaneousRound(clients []*redlock.Client, key string) (int, error) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	locks := make([]*redlock.Lock, len(clients))
	errs := make([]error, len(clients))
	for i, c := range clients {
		wg.Go(func() {
			<-start
			locks[i], errs[i] = c.TryLock(bg(), key, 5*time.Second)
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for i, l := range locks {
		if l == nil {
			if !errors.Is(errs[i], redlock.ErrNotObtained) {
				return 0, errs[i]
			}
			continue
		}
		won++
		if err := l.Unlock(bg()); err != nil {
			return 0, err
		}
	}
	return won, nil
}

// The settling attempt is made only when the refusal may be a split: a key
// held by one owner on every node is refused at once, with one attempt.
func TestRealTryLockOnAHeldKeyMakesOneAttempt(t *testing.T) {
	_, pools := realNodes(t, 3)
	var mu sync.Mutex
	var events []redlock.Event
	holder := newClient(t, pools)
	c := newClient(t, pools, redlock.WithObserver(redlock.ObserverFunc(func(_ context.Context, e redlock.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	})))
	_, err := holder.TryLock(bg(), "held", 5*time.Second)
	require.NoError(t, err)
	// TryLock returns at the majority: the premise is that every node holds
	// the key, so the holder's straggler must have landed first (else the
	// attempt below wins that node, which is a split).
	holder.WaitIdle()
	_, err = c.TryLock(bg(), "held", 5*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, events)
	assert.Equal(t, 1, events[len(events)-1].Attempts)
}

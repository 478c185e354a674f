package bench

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests drive the contention machinery with lockers that need no
// Redis.

// funcLocker locks with lock and unlocks at once.
type funcLocker func(ctx context.Context) (any, error)

func (f funcLocker) Lock(ctx context.Context, _ string) (any, error) { return f(ctx) }
func (funcLocker) Unlock(context.Context, any) error                 { return nil }

// A faulted entrant breaks the node before its slice and heals it after,
// once per slice.
func TestContendFaultPerSlice(t *testing.T) {
	var faults, heals, locksWhileFaulty atomic.Int32
	l := funcLocker(func(ctx context.Context) (any, error) {
		if faults.Load() > heals.Load() {
			locksWhileFaulty.Add(1)
		}
		return 1, nil
	})
	e := entrant{name: "faulty", lockers: []locker{l, l},
		fault: func() error { faults.Add(1); return nil },
		heal:  func() error { heals.Add(1); return nil }}
	out, err := contention(context.Background(), "k", []entrant{e}, plan{rounds: 3, slice: 5 * time.Millisecond}, 0, time.Second)
	require.NoError(t, err)
	assert.Equal(t, int32(3), faults.Load())
	assert.Equal(t, int32(3), heals.Load())
	assert.Positive(t, out["faulty"].acquired)
	assert.Equal(t, int32(len(out["faulty"].waits)), locksWhileFaulty.Load(), "every Lock ran with the fault in place")
}

// A Lock call that ignores its context cannot hold a faulted slice up: the
// node is healed at the end of the drain (here the only thing that ends
// the call), and the overrun is counted.
func TestContendHealsAtDrainEnd(t *testing.T) {
	healed := make(chan struct{})
	l := funcLocker(func(ctx context.Context) (any, error) {
		<-healed // stuck until the fault goes, deadline or not
		time.Sleep(lateBy + 100*time.Millisecond)
		return nil, errors.Join(errors.New("stuck"), ctx.Err())
	})
	e := entrant{name: "stuck", lockers: []locker{l},
		fault: func() error { return nil },
		heal:  func() error { close(healed); return nil }}
	out, err := contention(context.Background(), "k", []entrant{e}, plan{rounds: 1, slice: time.Millisecond}, 0, time.Millisecond)
	require.NoError(t, err)
	c := out["stuck"]
	assert.Equal(t, 1, c.unfinished)
	assert.Equal(t, 1, c.late)
	assert.Greater(t, c.latest, lateBy)
	assert.Equal(t, 0, c.acquired)
}

// A fault that cannot be injected stops the scenario, and the node is
// healed all the same.
func TestContendFaultError(t *testing.T) {
	healed := false
	e := entrant{name: "broken", lockers: []locker{funcLocker(func(context.Context) (any, error) { return 1, nil })},
		fault: func() error { return errors.New("no proxy") },
		heal:  func() error { healed = true; return nil }}
	_, err := contention(context.Background(), "k", []entrant{e}, plan{rounds: 2, slice: time.Millisecond}, 0, time.Second)
	require.ErrorContains(t, err, "broken: inject the fault: no proxy")
	assert.True(t, healed)
}

// The warm-up slice runs first, without the fault, and is not counted.
func TestContendWarmUpUncounted(t *testing.T) {
	var faulty atomic.Bool
	var warm, measured atomic.Int32
	l := funcLocker(func(ctx context.Context) (any, error) {
		if faulty.Load() {
			measured.Add(1)
		} else {
			warm.Add(1)
		}
		return 1, nil
	})
	e := entrant{name: "e", lockers: []locker{l},
		fault: func() error { faulty.Store(true); return nil },
		heal:  func() error { faulty.Store(false); return nil }}
	out, err := contention(context.Background(), "k", []entrant{e},
		plan{rounds: 1, slice: 5 * time.Millisecond, warmUp: 5 * time.Millisecond}, 0, time.Second)
	require.NoError(t, err)
	assert.Positive(t, warm.Load(), "the warm-up ran on healthy nodes")
	assert.Equal(t, measured.Load(), int32(len(out["e"].waits)), "only the measured slice is counted")
}

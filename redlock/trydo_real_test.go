package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

// doTTL is the TTL of the auto-extended locks of these tests: with
// newClient's node timeout of 1s, a kept lock needs more than the loss
// margin (2s) plus one node timeout.
const doTTL = 5 * time.Second

// TryDo does not run fn while another holds the key, runs it once when
// the key is free, holds the key while fn runs and releases it after.
func TestRealTryDo(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 5)
	a := newClient(t, pools)
	b := newClient(t, pools)

	held, err := a.TryLock(bg(), "nightly", doTTL)
	require.NoError(t, err)
	ran := false
	err = b.TryDo(bg(), "nightly", doTTL, func(context.Context) error { ran = true; return nil })
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrTaken)
	assert.False(t, ran, "fn ran while the key was held")
	assert.True(t, redlock.IsContended(err), "held: %v", err)
	assert.False(t, redlock.IsUnavailable(err))
	require.NoError(t, held.Unlock(bg()))

	runs := 0
	err = b.TryDo(bg(), "nightly", doTTL, func(ctx context.Context) error {
		runs++
		_, err := a.TryLock(ctx, "nightly", doTTL)
		assert.True(t, redlock.IsContended(err), "held while fn runs: %v", err)
		return ctx.Err()
	})
	require.NoError(t, err)
	assert.Equal(t, 1, runs)
	l, err := a.TryLock(bg(), "nightly", doTTL)
	require.NoError(t, err, "released when fn returned")
	require.NoError(t, l.Unlock(bg()))

	want := errors.New("report failed")
	err = b.TryDo(bg(), "nightly", doTTL, func(context.Context) error { return want })
	require.ErrorIs(t, err, want, "fn's error, as Do returns it")
}

// Replicas that fire together: while one runs fn the others are refused
// as contended, and never does a second run at the same time. (They may
// split the nodes so that none runs: TryDo makes one attempt.)
func TestRealTryDoReplicas(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 5)
	const n = 4
	started := make(chan struct{}, n)
	release := make(chan struct{})
	out := make(chan error, n)
	for range n {
		c := newClient(t, pools)
		go func() {
			out <- c.TryDo(bg(), "nightly", doTTL, func(ctx context.Context) error {
				started <- struct{}{}
				<-release
				return ctx.Err()
			})
		}()
	}
	// Every replica has either returned or is running fn: then let fn end.
	ran, returned := 0, 0
	var errs []error
	bound := time.After(10 * time.Second) // each attempt is bounded by the 1s node timeout
	for ran+returned < n {
		select {
		case <-started:
			ran++
		case err := <-out:
			returned++
			errs = append(errs, err)
		case <-bound:
			t.Fatalf("%d replicas ran, %d returned", ran, returned)
		}
	}
	close(release)
	for ; returned < n; returned++ {
		errs = append(errs, <-out)
	}
	assert.LessOrEqual(t, ran, 1, "two replicas ran fn at once")
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		assert.True(t, redlock.IsContended(err), "a refused replica: %v", err)
	}
	assert.Equal(t, ran, ok)
}

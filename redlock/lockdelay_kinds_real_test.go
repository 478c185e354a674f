package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

// delayCase is a hold of one kind and a conflicting rival: after the hold
// vanished (its TTL ran out without a release), the lock-delay refuses the
// rival; after a release it does not.
type delayCase struct {
	name  string
	hold  func(c *redlock.Client, key string, ttl time.Duration) (*redlock.Lock, error)
	rival func(ctx context.Context, c *redlock.Client, key string) (*redlock.Lock, error)
}

var delayCases = []delayCase{
	{
		name: "reader then writer",
		hold: func(c *redlock.Client, k string, ttl time.Duration) (*redlock.Lock, error) {
			return c.TryRLock(bg(), k, ttl)
		},
		rival: func(ctx context.Context, c *redlock.Client, k string) (*redlock.Lock, error) {
			return c.TryLock(ctx, k, time.Second)
		},
	},
	{
		name: "writer then reader",
		hold: func(c *redlock.Client, k string, ttl time.Duration) (*redlock.Lock, error) {
			return c.TryLock(bg(), k, ttl)
		},
		rival: func(ctx context.Context, c *redlock.Client, k string) (*redlock.Lock, error) {
			return c.TryRLock(ctx, k, time.Second)
		},
	},
	{
		name: "permit then permit",
		hold: func(c *redlock.Client, k string, ttl time.Duration) (*redlock.Lock, error) {
			return c.TryAcquirePermit(bg(), k, 1, ttl)
		},
		rival: func(ctx context.Context, c *redlock.Client, k string) (*redlock.Lock, error) {
			return c.TryAcquirePermit(ctx, k, 1, time.Second)
		},
	},
	{
		name: "multi then overlapping multi",
		hold: func(c *redlock.Client, k string, ttl time.Duration) (*redlock.Lock, error) {
			return c.TryLockAll(bg(), []string{k, k + ":a"}, ttl)
		},
		rival: func(ctx context.Context, c *redlock.Client, k string) (*redlock.Lock, error) {
			return c.TryLockAll(ctx, []string{k, k + ":b"}, time.Second)
		},
	},
	{
		name: "multi then exclusive",
		hold: func(c *redlock.Client, k string, ttl time.Duration) (*redlock.Lock, error) {
			return c.TryLockAll(bg(), []string{k, k + ":a"}, ttl)
		},
		rival: func(ctx context.Context, c *redlock.Client, k string) (*redlock.Lock, error) {
			return c.TryLock(ctx, k, time.Second)
		},
	},
	{
		name: "exclusive then multi",
		hold: func(c *redlock.Client, k string, ttl time.Duration) (*redlock.Lock, error) {
			return c.TryLock(bg(), k, ttl)
		},
		rival: func(ctx context.Context, c *redlock.Client, k string) (*redlock.Lock, error) {
			return c.TryLockAll(ctx, []string{k, k + ":b"}, time.Second)
		},
	},
	{
		name: "exclusive then blocking reader",
		hold: func(c *redlock.Client, k string, ttl time.Duration) (*redlock.Lock, error) {
			return c.TryLock(bg(), k, ttl)
		},
		rival: func(ctx context.Context, c *redlock.Client, k string) (*redlock.Lock, error) {
			return c.RLock(ctx, k, time.Second)
		},
	},
}

// The lock-delay covers every kind: a hold of any kind whose holder
// vanished keeps every conflicting kind out for the delay after its TTL ran
// out, with ErrLockDelay; the blocking calls wait it out and then get the
// key; a released hold passes on at once.
func TestRealLockDelayEveryKind(t *testing.T) {
	parallel(t)
	// The rival must reach the nodes within the delay for its refusal to
	// mean anything: 3s leaves a loaded machine room for the sleep's
	// overshoot and the rival's 1s context. The holds last a second: at
	// 300ms, beside a second run of the package and two CPU hogs, five of
	// seven holds were refused with "validity used up after 311-389ms".
	const ttl, delay = time.Second, 3 * time.Second
	_, pools := realNodes(t, 3)
	for k, dc := range delayCases {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel() // each case waits out its own delay, on its own key
			key := fmt.Sprintf("delay:%d", k)
			vanished := newClient(t, pools, redlock.WithLockDelay(delay))
			l, err := dc.hold(vanished, key, ttl)
			require.NoError(t, err)
			vanished.WaitIdle()
			// Every node applied the hold before it answered, and every
			// answer is in: the hold expires on each node within ttl from
			// now. Not from l.Until(): that is ttl after the attempt began,
			// less the drift, and a node the attempt reached late keeps
			// the key that much longer (in 1 of 10 runs at -cpu 1,2, the
			// multi-lock's rival found it still held 100ms after Until).
			expired := time.Now().Add(ttl)
			require.NoError(t, vanished.Close()) // never unlocked: its holder vanished
			until := l.Until()

			c := newClient(t, pools, redlock.WithLockDelay(delay))
			time.Sleep(time.Until(expired) + 100*time.Millisecond) // the hold's TTL has run out on every node
			ctx, cancel := context.WithTimeout(bg(), time.Second)
			got, err := dc.rival(ctx, c, key)
			cancel()
			if !assert.Error(t, err, "granted within the lock-delay of a vanished holder (%v after its validity)", time.Since(until)) {
				_ = got.Unlock(bg())
				return
			}
			assert.ErrorIs(t, err, redlock.ErrLockDelay)
			c.WaitIdle()

			// A blocking rival waits the delay out; a Try one gets it after.
			ctx, cancel = context.WithTimeout(bg(), 10*time.Second)
			defer cancel()
			start := time.Now()
			for {
				got, err = dc.rival(ctx, c, key)
				if err == nil {
					break
				}
				require.ErrorIs(t, err, redlock.ErrLockDelay, "only the delay refuses")
				require.NoError(t, ctx.Err())
				time.Sleep(50 * time.Millisecond)
			}
			// The delay runs from the hold's expiry on each node, which
			// is before until plus the drift: what is left of it, and
			// room for a loaded machine's retries.
			assert.Less(t, time.Since(start), delay+4*time.Second)

			// Released, not vanished: the next conflicting hold passes at once.
			require.NoError(t, got.Unlock(bg()))
			again, err := dc.hold(c, key, ttl)
			require.NoError(t, err, "after a release the key passes on")
			require.NoError(t, again.Unlock(bg()))
			got, err = dc.rival(bg(), c, key)
			require.NoError(t, err, "after a release the key passes on at once")
			require.NoError(t, got.Unlock(bg()))
		})
	}
}

package redlock_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

// A key that vanishes without a release (an operator's DEL) is taken by a
// waiting Lock at its next retry, as Lock's and WithRetry's docs say, not
// at its heartbeat (a third of its 30s TTL: 9.3-9.8s on dd8673a).
func TestRealWaiterTakesADeletedKeyAtTheNextRetry(t *testing.T) {
	servers, pools := realNodes(t, 3)
	holder := newClient(t, pools)
	waiter := newClient(t, pools)
	const key, ttl = "vanish", 30 * time.Second
	hl, err := holder.TryLock(bg(), key, ttl)
	require.NoError(t, err)
	// TryLock returns at the majority: the third node's SET may still be
	// on its way, and the waiter's first attempt could take that node
	// before it (seen in a CI-equivalent run: queued on two nodes only).
	holder.WaitIdle()
	require.Equal(t, 3, realHolders(t, servers, key, hl.Token()), "the holder holds every node")
	got := make(chan error, 1)
	ctx, cancel := context.WithTimeout(bg(), 20*time.Second)
	defer cancel()
	go func() {
		l, err := waiter.Lock(ctx, key, ttl, redlock.WithRetry(redlock.ConstantBackoff(50*time.Millisecond)))
		if err == nil {
			err = l.Unlock(bg())
		}
		got <- err
	}()
	awaitQueued(t, servers, key, 1)
	for _, s := range servers {
		require.NoError(t, s.Client(t).Del(bg(), key).Err())
	}
	deleted := time.Now()
	require.NoError(t, <-got)
	// The bound: one retry (50ms) plus its round (a node timeout, 1.5s at
	// this TTL, on a loaded machine), far below the 10s heartbeat.
	took := time.Since(deleted)
	assert.Less(t, took, 3*time.Second, "the waiter took the deleted key %v after the DEL; its retries come every 50ms, its heartbeat every 10s", took)
}

// awaitQueued waits until key's queue holds n waiters on every node (the
// event itself), within 10s.
func awaitQueued(t *testing.T, servers []*redistest.Server, key string, n int64) {
	t.Helper()
	queue := keyspace.Standalone{}.Queue(key)[1]
	deadline := time.Now().Add(10 * time.Second)
	for {
		var seen []string
		all := true
		for _, s := range servers {
			c, err := s.Client(t).ZCard(bg(), queue).Result()
			seen = append(seen, strconv.FormatInt(c, 10))
			all = all && err == nil && c >= n
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %d waiters in %s on every node; saw %s", n, queue, strings.Join(seen, ", "))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A blocked call whose strategy asks for no delay at all polls a node at
// most once every 10ms (the floor): on dd8673a a blocked RLock or LockAll
// sent about 19,000 commands a second. The bound counts calls of every
// script and SET on one node while the call waits for 500ms.
func TestRealZeroDelayRetriesPollNoFasterThanTheFloor(t *testing.T) {
	parallel(t)
	zero := redlock.RetryFunc(func(int) (time.Duration, bool) { return 0, true })
	for _, tc := range []struct {
		name string
		wait func(c *redlock.Client, ctx context.Context) error
	}{
		{"RLock", func(c *redlock.Client, ctx context.Context) error {
			_, err := c.RLock(ctx, "busy", 5*time.Second, redlock.WithRetry(zero))
			return err
		}},
		{"LockAll", func(c *redlock.Client, ctx context.Context) error {
			_, err := c.LockAll(ctx, []string{"busy", "other"}, 5*time.Second, redlock.WithRetry(zero))
			return err
		}},
		{"AcquirePermit", func(c *redlock.Client, ctx context.Context) error {
			_, err := c.AcquirePermit(ctx, "sem", 1, 5*time.Second, redlock.WithRetry(zero))
			return err
		}},
		{"Lock", func(c *redlock.Client, ctx context.Context) error {
			_, err := c.Lock(ctx, "busy", 5*time.Second, redlock.WithRetry(zero))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// At once: each case has nodes of its own, and a loaded
			// machine only lowers its count of calls.
			t.Parallel()
			servers, pools := realNodes(t, 3)
			holder := newClient(t, pools)
			_, err := holder.TryLock(bg(), "busy", 10*time.Second)
			require.NoError(t, err)
			_, err = holder.TryAcquirePermit(bg(), "sem", 1, 10*time.Second)
			require.NoError(t, err)
			holder.WaitIdle()
			c := newClient(t, pools)
			before := commandCalls(t, servers[0])
			ctx, cancel := context.WithTimeout(bg(), 500*time.Millisecond)
			start := time.Now()
			err = tc.wait(c, ctx)
			elapsed := time.Since(start)
			cancel()
			require.ErrorIs(t, err, redlock.ErrNotObtained)
			c.WaitIdle()
			calls := commandCalls(t, servers[0]) - before
			// Each attempt is at most two scripts on a node (the take and its
			// cleanup), plus a few of the Client's first use.
			limit := 2*int64(elapsed/(10*time.Millisecond)) + 10
			if !assert.LessOrEqual(t, calls, limit, "%d calls on node 0 in %v: more than one attempt per 10ms", calls, elapsed) {
				text, _ := servers[0].Client(t).Info(bg(), "commandstats").Result()
				t.Log(text)
			}
		})
	}
}

// commandCalls returns how many scripts node s ran (EVAL, EVALSHA), from
// INFO commandstats: every attempt of every kind is one script per node
// (commandstats also counts the commands a script calls, so only the
// scripts themselves are counted).
func commandCalls(t *testing.T, s *redistest.Server) int64 {
	t.Helper()
	text, err := s.Client(t).Info(bg(), "commandstats").Result()
	require.NoError(t, err)
	var n int64
	for line := range strings.Lines(text) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_eval" && name != "cmdstat_evalsha") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		v, err := strconv.ParseInt(calls, 10, 64)
		require.NoError(t, err, line)
		n += v
	}
	return n
}

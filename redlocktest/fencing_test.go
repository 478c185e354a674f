package redlocktest_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redlockgo/redlock/redlock"
	"github.com/redlockgo/redlock/redlocktest"
)

// TestFencingAcrossRestart: a node that was down while fenced holders came
// and went has a lagging fence counter; the next holder's fence is still
// above every earlier one (the lock raises the lagging counter), for
// every kind that fences.
func TestFencingAcrossRestart(t *testing.T) {
	ctx := context.Background()
	fenced := redlock.WithFencing()
	kinds := map[string]func(c *redlock.Client) (*redlock.Lock, error){
		"exclusive": func(c *redlock.Client) (*redlock.Lock, error) { return c.TryLock(ctx, "k", time.Minute, fenced) },
		"reader":    func(c *redlock.Client) (*redlock.Lock, error) { return c.TryRLock(ctx, "k", time.Minute, fenced) },
		"permit": func(c *redlock.Client) (*redlock.Lock, error) {
			return c.TryAcquirePermit(ctx, "k", 2, time.Minute, fenced)
		},
		"multi-lock": func(c *redlock.Client) (*redlock.Lock, error) {
			return c.TryLockAll(ctx, []string{"j", "k"}, time.Minute, fenced)
		},
	}
	for name, take := range kinds {
		t.Run(name, func(t *testing.T) {
			bothClocks(t, func(t *testing.T, bubble bool) {
				nodes := redlocktest.New(t, 3)
				c := nodes.Client()
				var last uint64
				next := func() {
					t.Helper()
					l, err := take(c)
					if err != nil {
						t.Fatal(err)
					}
					if l.Fence() <= last {
						t.Fatalf("fence %d, not above %d", l.Fence(), last)
					}
					last = l.Fence()
					// Each call landed on every node before the next one,
					// or a late acquisition could outlive its release.
					for _, k := range l.Keys() {
						everywhere(t, nodes, k, true, bubble)
					}
					unlock(t, l)
					for _, k := range l.Keys() {
						everywhere(t, nodes, k, false, bubble)
					}
				}
				next()
				nodes.Stop(0)
				for range 3 {
					next()
				}
				nodes.Start(0)
				nodes.Stop(1)
				next() // on nodes 0 (lagging) and 2
				nodes.Start(1)
				nodes.Stop(2)
				next() // on nodes 0 and 1
			})
		})
	}
}

// TestClockCheckAndHeal runs the Client's background work on the kit's
// nodes in a bubble: the clock check (TIME on every node) counts them all,
// and WithRepairOnExtend puts a lock back on a node that came back.
func TestClockCheckAndHeal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		nodes := redlocktest.New(t, 3)
		c := nodes.Client(redlock.WithClockCheck(time.Second))
		nodes.Stop(0)
		l, err := c.TryLock(ctx, "k", 3*time.Second, redlock.WithAutoExtend(0), redlock.WithRepairOnExtend())
		if err != nil {
			t.Fatal(err)
		}
		nodes.Start(0)
		time.Sleep(10 * time.Second) // extensions, clock checks
		synctest.Wait()
		st, err := c.Status(ctx, "k")
		if err != nil || st.Holders != 3 || l.Err() != nil {
			t.Fatalf("after heal: Status %+v, %v; lock error %v; want held on 3 nodes", st, err, l.Err())
		}
		nodes.Stop(1)
		nodes.Stop(2)
		wantLost(t, l) // node 0 alone is no majority, even with a good clock
	})
}

package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// A node's health (the restart quarantine, the clock check) is judged for
// every vote of every lock kind. These tests take a hold of each kind, make
// the nodes that forgot it unhealthy, and check that no rival of any kind is
// granted a conflicting hold, with a refusal that names the cause.

// conflict is a hold and a rival that must not be granted while it is valid.
type conflict struct {
	name  string
	hold  func(c *redlock.Client) (*redlock.Lock, error)
	keys  []string // the Redis keys the hold writes on a node (dropHold)
	rival func(ctx context.Context, c *redlock.Client, wait bool) (*redlock.Lock, error)
}

// healthTTL outlasts expectRefused over every conflict: each blocking rival
// waits out its 600ms deadline, for each Client.
const healthTTL = 20 * time.Second

func conflicts() []conflict {
	try := func(wait bool, t, b func() (*redlock.Lock, error)) (*redlock.Lock, error) {
		if wait {
			return b()
		}
		return t()
	}
	return []conflict{
		{
			name: "exclusive vs exclusive",
			hold: func(c *redlock.Client) (*redlock.Lock, error) { return c.TryLock(bg(), "ex", healthTTL) },
			keys: []string{"ex"},
			rival: func(ctx context.Context, c *redlock.Client, wait bool) (*redlock.Lock, error) {
				return try(wait, func() (*redlock.Lock, error) { return c.TryLock(ctx, "ex", healthTTL) },
					func() (*redlock.Lock, error) { return c.Lock(ctx, "ex", healthTTL) })
			},
		},
		{
			name: "writer vs reader",
			hold: func(c *redlock.Client) (*redlock.Lock, error) { return c.TryLock(bg(), "rw1", healthTTL) },
			keys: []string{"rw1"},
			rival: func(ctx context.Context, c *redlock.Client, wait bool) (*redlock.Lock, error) {
				return try(wait, func() (*redlock.Lock, error) { return c.TryRLock(ctx, "rw1", healthTTL) },
					func() (*redlock.Lock, error) { return c.RLock(ctx, "rw1", healthTTL) })
			},
		},
		{
			name: "reader vs writer",
			hold: func(c *redlock.Client) (*redlock.Lock, error) { return c.TryRLock(bg(), "rw2", healthTTL) },
			keys: []string{"rw2", keyspace.Standalone{}.Readers("rw2")},
			rival: func(ctx context.Context, c *redlock.Client, wait bool) (*redlock.Lock, error) {
				return try(wait, func() (*redlock.Lock, error) { return c.TryLock(ctx, "rw2", healthTTL) },
					func() (*redlock.Lock, error) { return c.Lock(ctx, "rw2", healthTTL) })
			},
		},
		{
			name: "permit vs permit",
			hold: func(c *redlock.Client) (*redlock.Lock, error) { return c.TryAcquirePermit(bg(), "sem", 1, healthTTL) },
			keys: []string{"sem"},
			rival: func(ctx context.Context, c *redlock.Client, wait bool) (*redlock.Lock, error) {
				return try(wait, func() (*redlock.Lock, error) { return c.TryAcquirePermit(ctx, "sem", 1, healthTTL) },
					func() (*redlock.Lock, error) { return c.AcquirePermit(ctx, "sem", 1, healthTTL) })
			},
		},
		{
			name: "multi vs overlapping multi",
			hold: func(c *redlock.Client) (*redlock.Lock, error) {
				return c.TryLockAll(bg(), []string{"m:a", "m:b"}, healthTTL)
			},
			keys: []string{"m:a", "m:b"},
			rival: func(ctx context.Context, c *redlock.Client, wait bool) (*redlock.Lock, error) {
				ks := []string{"m:b", "m:c"}
				return try(wait, func() (*redlock.Lock, error) { return c.TryLockAll(ctx, ks, healthTTL) },
					func() (*redlock.Lock, error) { return c.LockAll(ctx, ks, healthTTL) })
			},
		},
		{
			name: "multi vs exclusive",
			hold: func(c *redlock.Client) (*redlock.Lock, error) {
				return c.TryLockAll(bg(), []string{"mx:a", "mx:b"}, healthTTL)
			},
			keys: []string{"mx:a", "mx:b"},
			rival: func(ctx context.Context, c *redlock.Client, wait bool) (*redlock.Lock, error) {
				return try(wait, func() (*redlock.Lock, error) { return c.TryLock(ctx, "mx:b", healthTTL) },
					func() (*redlock.Lock, error) { return c.Lock(ctx, "mx:b", healthTTL) })
			},
		},
		{
			// A re-entry is granted only where the owner's hold is on a
			// majority of healthy nodes.
			name: "owner's re-entry",
			hold: func(c *redlock.Client) (*redlock.Lock, error) {
				return c.TryLock(bg(), "own1", healthTTL, redlock.WithOwner("job"))
			},
			keys:  []string{"own1", keyspace.Standalone{}.Holds("own1")},
			rival: ownerRival("own1", "job"),
		},
		{
			name: "other owner vs owner",
			hold: func(c *redlock.Client) (*redlock.Lock, error) {
				return c.TryLock(bg(), "own2", healthTTL, redlock.WithOwner("job"))
			},
			keys:  []string{"own2", keyspace.Standalone{}.Holds("own2")},
			rival: ownerRival("own2", "other"),
		},
	}
}

// ownerRival is a conflict's rival: TryLock or Lock of key by owner.
func ownerRival(key, owner string) func(ctx context.Context, c *redlock.Client, wait bool) (*redlock.Lock, error) {
	return func(ctx context.Context, c *redlock.Client, wait bool) (*redlock.Lock, error) {
		if wait {
			return c.Lock(ctx, key, healthTTL, redlock.WithOwner(owner))
		}
		return c.TryLock(ctx, key, healthTTL, redlock.WithOwner(owner))
	}
}

// expectRefused checks that rival is not granted to any of clients, neither
// by the one-attempt call nor by the blocking one within a short deadline,
// and that the refusals name cause. A refusal decided before the unhealthy
// nodes answered (a fresh connection to a restarted node is slower than the
// contended grace) names them as not answering, and a blocking call's
// rounds can find the key held by the call's own first attempt, whose
// cleanup is still on its way; so each call is repeated, each refused,
// until one names cause.
func expectRefused(t *testing.T, clients map[string]*redlock.Client, cs []conflict, holds []*redlock.Lock, cause error) {
	t.Helper()
	for k, cf := range cs {
		for who, c := range clients {
			for _, wait := range []bool{false, true} {
				var err error
				for try := 0; try < 5; try++ {
					ctx, cancel := context.WithTimeout(bg(), 600*time.Millisecond)
					var l *redlock.Lock
					l, err = cf.rival(ctx, c, wait)
					cancel()
					for _, c := range clients {
						c.WaitIdle() // a refused attempt's cleanup: the next one sees the nodes, not its leftovers
					}
					require.True(t, time.Now().Before(holds[k].Until()), "%s: the hold is still valid", cf.name)
					if !assert.Error(t, err, "%s: client %s (wait %v) was granted a conflicting hold", cf.name, who, wait) {
						_ = l.Unlock(bg())
						break
					}
					require.ErrorIs(t, err, redlock.ErrNotObtained, "%s: client %s (wait %v)", cf.name, who, wait)
					if errors.Is(err, cause) {
						break
					}
				}
				assert.ErrorIs(t, err, cause, "%s: client %s (wait %v): the refusal names the cause", cf.name, who, wait)
			}
		}
	}
}

// Three of five nodes restart without persistence while a hold of each
// kind is valid. No Client, neither one that used the nodes before the
// restart nor one created after it, is granted a conflicting hold of any
// kind, and each refusal names the quarantine.
func TestRealQuarantineEveryKind(t *testing.T) {
	first(t) // each blocking rival waits out its 600ms deadline
	servers, pools := realNodes(t, 5)
	cs := conflicts()
	a := newClient(t, pools, redlock.WithQuarantine(0))
	holds := make([]*redlock.Lock, len(cs))
	for k, cf := range cs {
		l, err := cf.hold(a)
		require.NoError(t, err, cf.name)
		holds[k] = l
	}
	a.WaitIdle()
	before := newClient(t, pools, redlock.WithQuarantine(time.Minute))
	_, err := before.TryLock(bg(), "warm-up", time.Second) // connections, and the nodes' runs, known
	require.NoError(t, err)
	before.WaitIdle()

	for _, s := range servers[:3] {
		s.Kill()
	}
	for _, s := range servers[:3] {
		s.Restart(t)
	}
	after := newClient(t, pools, redlock.WithQuarantine(time.Minute))
	expectRefused(t, map[string]*redlock.Client{"seen the restart": before, "created after it": after},
		cs, holds, redlock.ErrNodeQuarantined)
}

// dropHold removes keys from node s, as if the hold never reached it.
func dropHold(t *testing.T, s *redistest.Server, keys []string) {
	t.Helper()
	require.NoError(t, s.Client(t).Del(bg(), keys...).Err())
}

// A hold of each kind sits on nodes 0 and 1 of three (node 2 never got
// it), then node 0's clock jumps forward and drops it there. A Client
// whose clock check flagged node 0 is granted no conflicting hold of any
// kind, and each refusal names the clock fault.
func TestRealClockCheckEveryKind(t *testing.T) {
	parallel(t)
	servers, pools := clockNodes(t)
	node0 := &timeReads{Pool: pools[0], reads: make(chan struct{})}
	bPools := append([]pool.Pool{node0}, pools[1:]...)
	faults := make(chan redlock.Event, 10)
	b := newClient(t, bPools, redlock.WithClockCheck(50*time.Millisecond), redlock.WithQuarantine(time.Minute),
		redlock.WithObserver(redlock.ObserverFunc(func(_ context.Context, e redlock.Event) {
			if e.Kind == redlock.NodeClockFault {
				select {
				case faults <- e:
				default:
				}
			}
		})))
	select {
	case <-node0.reads:
	case <-time.After(10 * time.Second):
		t.Fatal("B did not read node 0's clock")
	}

	cs := conflicts()
	a := newClient(t, pools, redlock.WithQuarantine(0))
	holds := make([]*redlock.Lock, len(cs))
	for k, cf := range cs {
		l, err := cf.hold(a)
		require.NoError(t, err, cf.name)
		holds[k] = l
	}
	a.WaitIdle()
	for _, cf := range cs {
		dropHold(t, servers[2], cf.keys)
	}
	require.NoError(t, servers[0].SetClock(2*healthTTL, 1))
	for _, cf := range cs {
		// The jumped clock expires the key at its next read (libfaketime
		// reads the setting on every clock call): nodeCallBound is ample.
		awaitState(t, nodeCallBound, cf.name+": node 0 to drop the hold", func() bool {
			return servers[0].Client(t).Exists(bg(), cf.keys[0]).Val() == 0
		}, onServers(servers[:1], cf.keys[0]))
	}
	select {
	case <-faults:
	case <-time.After(10 * time.Second):
		t.Fatal("the clock fault was not reported")
	}
	expectRefused(t, map[string]*redlock.Client{"checking clocks": b}, cs, holds, redlock.ErrNodeClock)
}

// The election goes through the same judgement: with three of five nodes
// restarted unpersisted while a leader leads, no campaigner of either
// Client (one that used the nodes before the restart, one created after)
// becomes leader, and the refusal names the quarantine.
func TestRealQuarantineElection(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	a := newClient(t, pools, redlock.WithQuarantine(0))
	lead, err := a.Campaign(bg(), "health", "a", healthTTL)
	require.NoError(t, err)
	// Not a.WaitIdle: the leadership's keeper runs until Resign. Wait for
	// the election's key on every node instead.
	// Campaign returned at a majority; the other calls are on their way
	// (nodeCallBound).
	awaitState(t, nodeCallBound, "the election's key on all 5 nodes", func() bool {
		n := 0
		for _, s := range servers {
			n += int(s.Client(t).Exists(bg(), electionKey(t, "health")).Val())
		}
		return n == 5
	}, onServers(servers, electionKey(t, "health")))
	before := newClient(t, pools, redlock.WithQuarantine(time.Minute))
	retryUnanswered(t, before, "the warm-up lock", 3, func() (*redlock.Lock, error) {
		return before.TryLock(bg(), "warm-up", time.Second)
	})
	before.WaitIdle()
	for _, s := range servers[:3] {
		s.Kill()
	}
	for _, s := range servers[:3] {
		s.Restart(t)
	}
	after := newClient(t, pools, redlock.WithQuarantine(time.Minute))
	for who, c := range map[string]*redlock.Client{"seen the restart": before, "created after it": after} {
		var err error
		for try := 0; try < 5; try++ {
			ctx, cancel := context.WithTimeout(bg(), 600*time.Millisecond)
			var l *redlock.Leadership
			l, err = c.Campaign(ctx, "health", who, healthTTL)
			cancel()
			if !assert.Error(t, err, "client %s became leader while a leader leads", who) {
				_ = l.Resign(bg())
				break
			}
			c.WaitIdle() // the refused campaign's cleanup
			require.ErrorIs(t, err, redlock.ErrNotObtained)
			if errors.Is(err, redlock.ErrNodeQuarantined) {
				break
			}
		}
		assert.ErrorIs(t, err, redlock.ErrNodeQuarantined, "client %s: the refusal names the quarantine", who)
	}
	require.NoError(t, lead.Err(), "the leader still leads")
}

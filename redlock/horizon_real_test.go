package redlock_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// A restarted node's return (issue 34, docs/safety.md): a node that
// restarted without its data counts again once every lease it could have
// forgotten has expired, its horizon read from its peers' lease ceilings.

// returns is an observer that hands on each NodeReturned event.
func returns() (redlock.Option, <-chan redlock.Event) {
	ch := make(chan redlock.Event, 16)
	return redlock.WithObserver(redlock.ObserverFunc(func(_ context.Context, e redlock.Event) {
		if e.Kind == redlock.NodeReturned {
			select {
			case ch <- e:
			default:
			}
		}
	})), ch
}

// Five unpersisted nodes, a 3s lock held (kept alive), node 0 restarted
// empty. A Client that reaches every node finds node 0 quarantined and
// reads its peers' ceilings (3s) once the settle time (NodeTimeoutLimit, 5s)
// has passed: node 0 counts again within the later of the two, its drift
// and 2s of its restart, and the Client declares it (B, or A's keeper). A Client created after
// that over the same Pools, with two of the other four nodes stopped,
// takes a new lock, which needs node 0; the held key is granted to nobody
// while A holds it.
func TestRealRestartedNodeReturnsAtItsHorizon(t *testing.T) {
	parallel(t)
	const ttl = 3 * time.Second
	settle := redlock.NodeTimeoutLimit + redlock.NodeTimeoutLimit/100 + 2*time.Millisecond
	bound := max(ttl+ttl/100+2*time.Millisecond, settle) + 2*time.Second
	servers, pools := realNodes(t, 5)
	// 250ms, not less: node 0 forgets A's lock, so each extension needs
	// three of the other four nodes within the node timeout, and the 3s TTL
	// leaves 500ms past the loss margin (twice the node timeout) for them.
	//
	// A's keeper meets node 0 too, and probes its horizon as B does:
	// whichever Client establishes it first declares node 0 and reports
	// NodeReturned, and the other then counts node 0 by the declaration,
	// without an event (in a loaded make test A's keeper was first, and B
	// counted node 0 with no event of its own). So both report to one
	// channel.
	watch, returned := returns()
	a := newClient(t, pools, watch, redlock.WithNodeTimeout(250*time.Millisecond))
	la := retryUnanswered(t, a, "A's lock", 3, func() (*redlock.Lock, error) {
		return a.TryLock(bg(), "held", ttl, redlock.WithAutoExtend(0))
	})
	// (Not WaitIdle: the keeper runs until Unlock.) Every node holds A's
	// lock before node 0 forgets it.
	redistest.WaitFor(t, ttl, "A's lock on every node", func() (bool, string) {
		n := realHolders(t, servers, "held", la.Token())
		return n == 5, fmt.Sprint(n, " nodes hold it")
	})

	restarted := time.Now()
	servers[0].Kill()
	servers[0].Restart(t)
	rewarm(t, pools[:1])

	b := newClient(t, pools, watch)
	// B's traffic meets node 0: its yes does not count, and B probes its
	// horizon. Meanwhile nobody gets the held key.
	deadline := time.NewTimer(restarted.Add(bound).Sub(time.Now()))
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var back redlock.Event
	for waiting := true; waiting; {
		l, err := b.TryLock(bg(), "other", ttl)
		if err == nil {
			releasedOrLate(t, l.Unlock(bg()), "l's Unlock")
		}
		_, err = b.TryLock(bg(), "held", ttl)
		require.ErrorIs(t, err, redlock.ErrNotObtained, "A holds the key (valid until %v)", la.Until())
		select {
		case back = <-returned:
			waiting = false
		case <-deadline.C:
			t.Fatalf("node 0 not counted again %v after its restart (ttl %v): B saw %v", bound, ttl, b.NodeStates()[0])
		case <-tick.C:
		}
	}
	assert.Equal(t, pools[0].Addr(), back.Addr)
	assert.Less(t, back.Duration, bound, "the run's age when it returned")
	require.NoError(t, la.Err(), "A's lock is kept alive throughout")

	servers[3].Kill()
	servers[4].Kill()
	// A Client over the same Pools: their identity of node 0 was read at
	// its restart, before B's declaration, so its first vote may find node
	// 0 out and read the declaration in the background (one round trip,
	// probed at most once a second); a lock on three of the five nodes
	// needs node 0. Not a wall-clock bound from the restart: the Kills and
	// the new Client's dials took 2s in a quiet -cpu 1,2 run.
	c := newClient(t, pools)
	var lc *redlock.Lock
	redistest.WaitFor(t, 5*time.Second, "a new Client to count node 0 by its declaration", func() (bool, string) {
		l, err := c.TryLock(bg(), "fresh", ttl)
		lc = l
		return err == nil, fmt.Sprint(err)
	})
	c.WaitIdle()
	assert.Equal(t, redlock.StateOK, c.NodeStates()[0].State, "node 0's yes counted for the new Client: %v", c.NodeStates()[0])
	// A's keeper cannot extend now (node 0 lost A's key, nodes 3 and 4
	// are down): A's lock ends at its last validity, about a TTL after the
	// Kills, and its keys on nodes 1 and 2 soon after. The held key must
	// be refused while they are there: checked when the try ended inside
	// A's validity, which this phase takes about 2s of in a quiet run. A
	// loaded machine can take longer, and then there is nothing to check.
	until := la.Until()
	_, err := c.TryLock(bg(), "held", ttl)
	if time.Now().Before(until) {
		require.ErrorIs(t, err, redlock.ErrNotObtained, "A still holds the key on nodes 1 and 2 (valid until %v)", until)
	} else {
		t.Logf("not checked: A's validity ended at %v, before the new Client's try ended (%v)", until, err)
	}
	releasedOrLate(t, lc.Unlock(bg()), "lc's Unlock")
}

// A node whose peers cannot vouch for it sits out the whole quarantine:
// with node 0 restarted and nodes 3 and 4 down, only two peers answer, no
// quorum of the other nodes, and node 0 stays out (its yes does not
// count, so the three live nodes make no majority). Once the peers are
// back, the next probe establishes the horizon.
func TestRealRestartedNodeWithoutVouchersSitsOut(t *testing.T) {
	parallel(t)
	const ttl = 2 * time.Second
	servers, pools := realNodes(t, 5)
	a := newClient(t, pools)
	la, err := a.TryLock(bg(), "held", ttl)
	require.NoError(t, err)
	a.WaitIdle()
	servers[3].Kill()
	servers[4].Kill()
	servers[0].Kill()
	servers[0].Restart(t)
	rewarm(t, pools[:1])

	watch, returned := returns()
	// newClient's node timeout (1s): every refusal below must name the
	// quarantine, and at 200ms live nodes missed it on a loaded machine
	// (LOADED_HOGS=2: "node 0: no answer within the node timeout; node 2:
	// no answer within the node timeout").
	b := newClient(t, pools, watch)
	// Past A's validity, past the horizon the ceilings would give (2s),
	// node 0 still does not count: nobody vouched for it.
	until := la.Until().Add(ttl + time.Second)
	for time.Now().Before(until) {
		_, err := b.TryLock(bg(), "k", ttl)
		require.ErrorIs(t, err, redlock.ErrNodeQuarantined, "three live nodes, one of them quarantined")
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case e := <-returned:
		t.Fatalf("node 0 returned with two peers down: %+v", e)
	default:
	}

	servers[3].Restart(t)
	servers[4].Restart(t)
	awaitPools(t, pools[3:])
	// The restarted peers are young and unpersisted too: they vouch for
	// nobody. Declare them fresh, as an operator of a new node would (they
	// hold nothing of A's), and node 0's next probe has its quorum.
	for _, s := range servers[3:] {
		s.MarkFresh(t)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := b.TryLock(bg(), "k2", ttl)
		if err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "node 0 never counted again: %v", err)
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case <-returned:
	case <-time.After(time.Second):
		t.Fatal("no NodeReturned event")
	}
}

// Every script that grants or extends a lease raises the node's lease
// ceiling to the lease's TTL, and keeps it alive as long: each step below
// uses a longer TTL than every step before, so each must raise it.
func TestRealCeilingRaisedByEveryGrant(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 3)
	c := newClient(t, pools)
	delayed := newClient(t, pools, redlock.WithLockDelay(time.Millisecond))
	// Ten seconds and up: each lock outlives the checks before its Extend
	// (1.1s did not, once, on a loaded machine: "validity ended").
	ttl := 10 * time.Second
	next := func() time.Duration { ttl += 100 * time.Millisecond; return ttl }
	check := func(what string) {
		t.Helper()
		for i, s := range servers {
			rc := s.Client(t)
			v, err := rc.Get(bg(), "redlock:ceiling").Result()
			require.NoError(t, err, "%s: node %d has no ceiling", what, i)
			assert.Equal(t, strconv.FormatInt(ttl.Milliseconds(), 10), v, "%s: node %d", what, i)
			pt, err := rc.PTTL(bg(), "redlock:ceiling").Result()
			require.NoError(t, err)
			assert.Greater(t, pt, ttl-2*time.Second, "%s: node %d keeps it about as long as the lease", what, i)
		}
	}
	must := func(l *redlock.Lock, err error) *redlock.Lock {
		t.Helper()
		require.NoError(t, err)
		c.WaitIdle()
		delayed.WaitIdle()
		return l
	}
	l := must(c.TryLock(bg(), "plain", next()))
	check("SET NX")
	require.NoError(t, l.Extend(bg(), next()))
	c.WaitIdle()
	check("extend")
	must(c.TryLock(bg(), "fenced", next(), redlock.WithFencing()))
	check("fenced SET")
	must(delayed.TryLock(bg(), "delayed", next()))
	check("delayed SET")
	r := must(c.TryRLock(bg(), "rw", next()))
	check("reader")
	require.NoError(t, r.Extend(bg(), next()))
	c.WaitIdle()
	check("reader's extension")
	p := must(c.TryAcquirePermit(bg(), "sem", 2, next()))
	check("permit")
	require.NoError(t, p.Extend(bg(), next()))
	c.WaitIdle()
	check("permit's extension")
	m := must(c.TryLockAll(bg(), []string{"m1", "m2"}, next()))
	check("multi-lock")
	require.NoError(t, m.Extend(bg(), next()))
	c.WaitIdle()
	check("multi-lock's extension")
	o := must(c.TryLock(bg(), "owned", next(), redlock.WithOwner("job")))
	check("owner's hold")
	require.NoError(t, o.Extend(bg(), next()))
	c.WaitIdle()
	check("owner's extension")

	// A hand-off: a waiter queued behind a holder gets the key from the
	// holder's release, with the waiter's TTL.
	h := must(c.TryLock(bg(), "queue", ttl))
	waiter := newClient(t, pools)
	got := make(chan *redlock.Lock, 1)
	wttl := next()
	go func() {
		l, err := waiter.Lock(bg(), "queue", wttl, redlock.WithRetry(redlock.ConstantBackoff(time.Hour)))
		if err == nil {
			got <- l
		}
		close(got)
	}()
	redistest.WaitFor(t, 5*time.Second, "the waiter queued on every node", func() (bool, string) {
		n := 0
		for _, s := range servers {
			if k, _ := s.Client(t).ZCard(bg(), queueKey("queue")).Result(); k == 1 {
				n++
			}
		}
		return n == len(servers), strconv.Itoa(n) + " queues hold it"
	})
	require.NoError(t, h.Unlock(bg()))
	wl, ok := <-got
	require.True(t, ok, "the waiter got the key")
	c.WaitIdle()
	check("hand-off")
	releasedOrLate(t, wl.Unlock(bg()), "wl's Unlock")
}

// The horizon keeps a lock that the restarted node held on a bare
// majority: A holds "held" on nodes 0, 1 and 2 only (3 and 4 down while it
// locked, then back, empty and declared fresh, as new nodes), and node 0
// restarts empty. Node 0 may return
// only once A's lease has expired (the ceilings of nodes 1 and 2 say how
// long it may last): until then B, trying the key over and over and
// reaching nodes 0, 3 and 4, must be refused. Without the ceiling node 0
// would return at once and B would take the key with 0, 3 and 4.
func TestRealHorizonKeepsALockOnABareMajority(t *testing.T) {
	parallel(t)
	const ttl = 3 * time.Second
	servers, pools := realNodes(t, 5)
	servers[3].Kill()
	servers[4].Kill()
	// newClient's node timeout (1s): A needs all three live nodes, and at
	// 100ms every one missed it on a loaded machine.
	a := newClient(t, pools)
	la, err := a.TryLock(bg(), "held", ttl)
	require.NoError(t, err)
	a.WaitIdle()
	for _, s := range servers[3:] {
		s.Restart(t)
		s.MarkFresh(t)
	}
	awaitPools(t, pools[3:])
	require.Equal(t, 3, realHolders(t, servers, "held", la.Token()), "A holds nodes 0, 1 and 2")
	servers[0].Kill()
	servers[0].Restart(t)
	rewarm(t, pools[:1])

	watch, returned := returns()
	// newClient's node timeout (1s) for B too: B's probes of node 0 read
	// its peers' ceilings and declare it within B's node timeout, and a
	// probe that gives up waits for B's next vote.
	b := newClient(t, pools, watch)
	tries := 0
	for time.Now().Before(la.Until()) {
		lb, err := b.TryLock(bg(), "held", ttl)
		if err == nil && time.Now().Before(la.Until()) {
			t.Fatalf("B holds the key A holds (A valid for %v more), after %d tries; node 0 returned: %v",
				time.Until(la.Until()), tries, len(returned) > 0)
		}
		if err == nil {
			releasedOrLate(t, lb.Unlock(bg()), "lb's Unlock")
		}
		tries++
		time.Sleep(20 * time.Millisecond)
	}
	require.Greater(t, tries, 10, "B tried throughout A's validity")
	// Node 0 returns at its horizon: its restart (before A's lease ended)
	// plus the ceiling (ttl), its drift allowance and a margin, or plus the
	// settle time (NodeTimeoutLimit) and its drift if later. A probe
	// that gave up (a read or the declaration past B's node timeout, as on
	// a loaded machine) is made again only at a vote that finds node 0
	// out, once a second at most: so B goes on voting until node 0 is
	// back, for the horizon's bound after A's lease and one more ttl of
	// probes.
	horizon := max(ttl+ttl/100+2*time.Millisecond+250*time.Millisecond, // the ceiling, its drift allowance, the margin
		redlock.NodeTimeoutLimit+redlock.NodeTimeoutLimit/100+2*time.Millisecond) // or the settle time and its drift
	deadline := la.Until().Add(horizon + ttl)
	for votes := 0; ; votes++ {
		select {
		case e := <-returned:
			assert.GreaterOrEqual(t, e.Duration, ttl, "node 0 returned only after A's lease could have expired")
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 0 did not return %v after A's lease (its horizon: %v past its restart, which came before); B voted %d times meanwhile",
				time.Since(la.Until()).Round(time.Millisecond), horizon, votes)
		}
		if lb, err := b.TryLock(bg(), "held", ttl); err == nil {
			releasedOrLate(t, lb.Unlock(bg()), "lb's Unlock after A's lease")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitPools waits until each pool answers again, after its server came
// back: a pool that failed to dial while the server was down backs off
// (go-redis), so a first call may still fail at once.
func awaitPools(t *testing.T, pools []pool.Pool) {
	t.Helper()
	for _, p := range pools {
		redistest.WaitFor(t, 5*time.Second, "the pool of "+p.Addr()+" answers again", func() (bool, string) {
			ctx, cancel := context.WithTimeout(bg(), time.Second)
			defer cancel()
			_, err := p.Eval(ctx, warmScript, nil)
			return err == nil, fmt.Sprint(err)
		})
	}
}

// A waiter gathers its grants over time, and one of them may come from a
// node that restarted since and forgot it. Node 0 grants waiter W, then
// restarts empty; the holder of nodes 1 and 2 unlocks and hands them to W;
// nodes 3 and 4 are down.
//
//   - When W's grants span more than the settle time of a restarted node's
//     horizon (the hand-off comes 700ms after node 0's grant), W confirms
//     them by an extension, which node 0 does not answer with W's token: W
//     gets no lock (before the confirmation, Lock returned one, held on
//     two nodes of five).
//   - When they do not (the hand-off follows the restart at once), W may
//     count the forgotten grant, and that is safe: node 0 counts again only
//     once its peers' ceilings, read a settle time after its restart, say
//     that W's lease has expired. Nodes 3 and 4 come back; a rival trying
//     the key from all five nodes is refused while W's lock is valid.
func TestRealWaiterGrantsAcrossARestart(t *testing.T) {
	parallel(t)
	// hold is the holder's lease and ttl W's TTL.
	// Within the settle time, the holder's lease is shorter than W's: the
	// ceilings the hand-off raises to W's TTL are what keep node 0 out.
	// Past it, the horizon plays no part, and both are long enough to
	// outlast the setup (the wait for node 0's grant, its restart and the
	// spread): with a 2s lease the holder's lock expired before its Unlock
	// beside two CPU hogs, and the hand-off never came.
	for _, tc := range []struct {
		name      string
		spread    time.Duration
		hold, ttl time.Duration
	}{
		{"spread past the settle time", 700 * time.Millisecond, 5 * time.Second, 6 * time.Second},
		{"within the settle time", 0, 2 * time.Second, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ttl := tc.ttl
			servers, pools := realNodes(t, 5)
			h := newClient(t, pools, redlock.WithNodeTimeout(200*time.Millisecond))
			lh, err := h.TryLock(bg(), "k", tc.hold)
			require.NoError(t, err)
			h.WaitIdle()
			for _, s := range []*redistest.Server{servers[0], servers[3], servers[4]} {
				require.NoError(t, s.Client(t).Del(bg(), "k").Err())
			}
			servers[3].Kill()
			servers[4].Kill()

			w := newClient(t, pools, redlock.WithNodeTimeout(200*time.Millisecond))
			type outcome struct {
				l   *redlock.Lock
				err error
			}
			got := make(chan outcome, 1)
			// W's wait is cut 1s after the hand-off (W decides within a
			// round of its 200ms node timeout: the rest is room for a
			// loaded machine), or by the outer bound should the test stall.
			ctx, cancel := context.WithTimeout(bg(), tc.hold+ttl)
			defer cancel()
			go func() {
				l, err := w.Lock(ctx, "k", ttl, redlock.WithRetry(redlock.ConstantBackoff(time.Hour)))
				got <- outcome{l, err}
			}()
			redistest.WaitFor(t, 2*time.Second, "node 0 granted the waiter", func() (bool, string) {
				v, _ := servers[0].Client(t).Get(bg(), "k").Result()
				return v != "" && v != lh.Token(), "node 0 holds " + v
			})
			servers[0].Kill()
			servers[0].Restart(t)
			time.Sleep(tc.spread) // the scenario: how far apart W's grants land
			// The holder held only nodes 1 and 2 by now: its Unlock hands
			// them to the waiter and reports the others.
			require.ErrorIs(t, lh.Unlock(bg()), redlock.ErrNotReleased)
			time.AfterFunc(time.Second, cancel)

			o := <-got
			if tc.spread > 0 {
				if o.err == nil {
					t.Fatalf("the waiter got a lock held on %d node(s) of 5 (a forgotten grant counted past the settle time)",
						realHolders(t, servers[:3], "k", o.l.Token()))
				}
				require.ErrorIs(t, o.err, redlock.ErrNotObtained)
				// The hand-off reached W: it held nodes 1 and 2 when its
				// wait ended, and did not count node 0.
				var qe *redlock.QuorumError
				require.ErrorAs(t, o.err, &qe)
				require.Equal(t, 2, qe.Agreed, "W's grants when its wait ended: %v", o.err)
				return
			}
			if o.err != nil {
				t.Logf("W confirmed its grants after all (they spanned the settle time on this machine): %v", o.err)
				require.ErrorIs(t, o.err, redlock.ErrNotObtained)
				return
			}
			t.Logf("W counted node 0's forgotten grant: held on %d node(s) until %v", realHolders(t, servers[:3], "k", o.l.Token()), time.Until(o.l.Until()))
			for _, s := range servers[3:] {
				s.Restart(t)
				s.MarkFresh(t)
			}
			awaitPools(t, pools[3:])
			rival := newClient(t, pools, redlock.WithNodeTimeout(200*time.Millisecond))
			tries := 0
			for time.Now().Before(o.l.Until()) {
				if lr, err := rival.TryLock(bg(), "k", ttl); err == nil && time.Now().Before(o.l.Until()) {
					t.Fatalf("a rival holds the key W holds (W valid for %v more), after %d tries", time.Until(o.l.Until()), tries)
				} else if err == nil {
					releasedOrLate(t, lr.Unlock(bg()), "lr's Unlock")
				}
				tries++
				time.Sleep(20 * time.Millisecond)
			}
			require.Positive(t, tries, "the rival tried while W's lock was valid")
		})
	}
}

// A Client that raised a node's ceiling itself sends a bare SET NX PX while
// it knows the ceiling covers the lease (lease.Env.setNX): every lock key
// set that way is covered, on every node, for as long as it lives; and
// after a node restarts (its ceiling gone), the next lock raises it again.
func TestRealCeilingCoversEveryPlainLock(t *testing.T) {
	parallel(t)
	const ttl = 2 * time.Second
	servers, pools := realNodes(t, 3)
	c := newClient(t, pools, redlock.WithNodeTimeout(100*time.Millisecond))
	// take is a lock this test needs, not one it checks: on a loaded
	// machine two of three nodes may not answer within 100ms.
	take := func(key string) {
		t.Helper()
		retryUnanswered(t, c, "the lock of "+key, 3, func() (*redlock.Lock, error) { return c.TryLock(bg(), key, ttl) })
	}
	check := func(key string) {
		t.Helper()
		for i, s := range servers {
			rc := s.Client(t)
			kt, err := rc.PTTL(bg(), key).Result()
			require.NoError(t, err)
			if kt <= 0 {
				continue // the node did not take it
			}
			v, err := rc.Get(bg(), "redlock:ceiling").Int64()
			require.NoError(t, err, "node %d holds %s without a ceiling", i, key)
			ct, err := rc.PTTL(bg(), "redlock:ceiling").Result()
			require.NoError(t, err)
			assert.GreaterOrEqual(t, v, ttl.Milliseconds(), "node %d: the ceiling covers %s's TTL", i, key)
			assert.GreaterOrEqual(t, ct, kt, "node %d: the ceiling outlives %s", i, key)
		}
	}
	// The first lock raises each node's ceiling for three TTLs; the next
	// ones, well within that, find it covering them.
	for n := range 20 {
		key := fmt.Sprint("k", n)
		take(key)
		c.WaitIdle()
		check(key)
	}
	// Node 0 restarts empty while the Client still knows its old run's
	// ceiling: the next lock must raise the new run's.
	servers[0].Kill()
	servers[0].Restart(t)
	servers[0].MarkFresh(t) // counted at once: this test is about the ceiling
	rewarm(t, pools[:1])
	take("after")
	c.WaitIdle()
	check("after")
	v, err := servers[0].Client(t).Get(bg(), "redlock:ceiling").Int64()
	require.NoError(t, err, "the restarted node's ceiling is raised again")
	assert.Equal(t, ttl.Milliseconds(), v)

	// Again, without reconnecting first: the pool finds its connection
	// dead and dials the new run during the call, after the Client chose a
	// bare SET for the old run; the SET that landed on the new run is
	// followed by the raise there before it counts.
	for n := range 5 {
		take(fmt.Sprint("warm", n)) // the cache covers node 0's new run
	}
	c.WaitIdle()
	servers[0].Kill()
	servers[0].Restart(t)
	servers[0].MarkFresh(t)
	for n := range 5 {
		key := fmt.Sprint("during", n)
		if _, err := c.TryLock(bg(), key, ttl); err == nil {
			c.WaitIdle()
			check(key)
		}
	}
}

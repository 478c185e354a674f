package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

// Leader election on real redis-server processes (election.go).

// campaignAsync runs c.Campaign in a goroutine; its result arrives on the
// returned channel.
func campaignAsync(ctx context.Context, c *redlock.Client, election, value string, ttl time.Duration) <-chan campaignResult {
	out := make(chan campaignResult, 1)
	go func() {
		ls, err := c.Campaign(ctx, election, value, ttl)
		out <- campaignResult{ls, err}
	}()
	return out
}

type campaignResult struct {
	ls  *redlock.Leadership
	err error
}

// waitCampaigner waits until a campaigner waits in the election's queue on a
// majority of servers: the next Resign hands it the leadership.
func waitCampaigner(t *testing.T, servers []*redistest.Server, election string) {
	t.Helper()
	q := queueKey(electionKey(t, election))
	// A campaigner queues in its first round: node calls; twice
	// nodeCallBound, as other campaigners share the machine.
	awaitState(t, 2*nodeCallBound, "a campaigner queued for "+election+" on a majority", func() bool {
		n := 0
		for _, s := range servers {
			if c, err := s.Client(t).Exists(bg(), q).Result(); err == nil && c == 1 {
				n++
			}
		}
		return n >= len(servers)/2+1
	}, onServers(servers, q))
}

// within waits for r's campaign at most d.
func within(t *testing.T, r <-chan campaignResult, d time.Duration) *redlock.Leadership {
	t.Helper()
	select {
	case res := <-r:
		require.NoError(t, res.err)
		return res.ls
	case <-time.After(d):
		t.Fatalf("the campaign did not win within %v", d)
		return nil
	}
}

func TestRealElectionOneLeaderAtATime(t *testing.T) {
	servers, pools := realNodes(t, 5)
	a := newClient(t, pools)
	b := newClient(t, pools)

	la, err := a.Campaign(bg(), "e1", "a", 10*time.Second)
	require.NoError(t, err)
	require.Positive(t, la.Term())
	assert.Equal(t, "a", la.Value())
	assert.True(t, la.Until().After(time.Now()))

	rb := campaignAsync(bg(), b, "e1", "b", 10*time.Second)
	waitCampaigner(t, servers[:5], "e1")
	select {
	case res := <-rb:
		t.Fatalf("a second campaigner won while the first leads: %v", res.err)
	default:
	}
	ld, err := b.Leader(bg(), "e1")
	require.NoError(t, err)
	assert.Equal(t, "a", ld.Value)
	assert.Equal(t, la.Term(), ld.Term)

	start := time.Now()
	require.NoError(t, la.Resign(bg()))
	lb := within(t, rb, time.Second)
	t.Logf("handed over in %v", time.Since(start))
	assert.Greater(t, lb.Term(), la.Term(), "terms strictly increase")
	ld, err = a.Leader(bg(), "e1")
	require.NoError(t, err)
	assert.Equal(t, redlock.Leader{Value: "b", Term: lb.Term(), TTL: ld.TTL}, ld)
	require.NoError(t, lb.Resign(bg()))
	_, err = a.Leader(bg(), "e1")
	require.ErrorIs(t, err, redlock.ErrNoLeader)
}

// A leadership and its record survive the restart of every node with
// appendfsync always, and the next term, from another Client, is higher.
func TestRealElectionAcrossRestartsWithAOFAlways(t *testing.T) {
	parallel(t)
	servers, pools := persistentNodes(t, 5, redistest.AOFAlways)
	a := newClient(t, pools, redlock.WithNodeTimeout(500*time.Millisecond))
	la, err := a.Campaign(bg(), "e11", "a", 20*time.Second)
	require.NoError(t, err)
	for _, s := range servers {
		s.Restart(t)
	}
	ld, err := a.Leader(bg(), "e11")
	require.NoError(t, err)
	assert.Equal(t, "a", ld.Value)
	assert.Equal(t, la.Term(), ld.Term)
	require.NoError(t, la.Err(), "the keeper rode out the restarts")
	require.NoError(t, la.Resign(bg()))

	for _, s := range servers {
		s.Restart(t)
	}
	b := newClient(t, pools, redlock.WithNodeTimeout(500*time.Millisecond))
	ctx, cancel := context.WithTimeout(bg(), 20*time.Second)
	defer cancel()
	lb, err := b.Campaign(ctx, "e11", "b", 20*time.Second)
	require.NoError(t, err)
	assert.Greater(t, lb.Term(), la.Term())
	require.NoError(t, lb.Resign(bg()))
}

func TestRealCampaignContextEnds(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 5)
	a := newClient(t, pools)
	b := newClient(t, pools)
	la, err := a.Campaign(bg(), "e2", "a", 10*time.Second)
	require.NoError(t, err)
	defer la.Resign(bg())

	ctx, cancel := context.WithTimeout(bg(), 300*time.Millisecond)
	defer cancel()
	_, err = b.Campaign(ctx, "e2", "b", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	ctx, cancel = context.WithCancel(bg())
	r := campaignAsync(ctx, b, "e2", "b", 10*time.Second)
	cancel()
	res := <-r
	require.ErrorIs(t, res.err, redlock.ErrNotObtained)
	require.ErrorIs(t, res.err, context.Canceled)
}

func TestRealElectionResignHandsOverWithTwoNodesStopped(t *testing.T) {
	defer parallel(t).idle() // its cleanups wait out the calls to silent nodes
	servers, pools := realNodes(t, 5)
	fast := redlock.WithNodeTimeout(250 * time.Millisecond)
	a := newClient(t, pools, fast)
	b := newClient(t, pools, fast)
	for _, s := range servers[3:] {
		s.Pause()
		t.Cleanup(s.Resume)
	}
	la, err := a.Campaign(bg(), "e3", "a", 10*time.Second)
	require.NoError(t, err)
	rb := campaignAsync(bg(), b, "e3", "b", 10*time.Second)
	waitCampaigner(t, servers[:3], "e3")

	require.NoError(t, la.Resign(bg()))
	lb := within(t, rb, time.Second)
	assert.Greater(t, lb.Term(), la.Term())
	ld, err := a.Leader(bg(), "e3")
	require.NoError(t, err)
	assert.Equal(t, "b", ld.Value)
	require.NoError(t, lb.Resign(bg()))
}

func TestRealElectionVanishedLeaderSucceededAfterValidity(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	// A node timeout of 300ms: with 100ms every node missed A's Campaign
	// on a loaded machine. A 3s TTL: the keeper must keep A's leadership
	// until Close, and its window to get an extension through, from the
	// due time (ttl/3) to the loss point (2 node timeouts before the
	// validity ends), is about 1.4s. With a 1s TTL it was under 100ms,
	// and in a loaded make test the keeper lost the leadership before
	// Close ("lock not extended: 2 of 5 nodes agreed").
	a, err := redlock.New(pools, redlock.WithNodeTimeout(300*time.Millisecond))
	require.NoError(t, err)
	b := newClient(t, pools)

	const ttl = 3 * time.Second
	la, err := a.Campaign(bg(), "e4", "a", ttl)
	require.NoError(t, err)
	rb := campaignAsync(bg(), b, "e4", "b", 10*time.Second)
	waitCampaigner(t, servers, "e4")

	require.NoError(t, a.Close()) // vanishes: no Resign, the keeper stops
	<-la.Done()
	require.ErrorIs(t, la.Err(), redlock.ErrClosed)
	require.ErrorIs(t, la.Err(), redlock.ErrLockLost)
	validUntil := la.Until()

	lb := within(t, rb, ttl+5*time.Second)
	assert.False(t, time.Now().Before(validUntil), "succeeded only after the vanished leader's validity ended")
	assert.Greater(t, lb.Term(), la.Term())
	require.NoError(t, lb.Resign(bg()))
}

func TestRealElectionLoss(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name string
		lose func(t *testing.T, servers []*redistest.Server)
	}{
		{"majority killed", func(t *testing.T, servers []*redistest.Server) {
			for _, s := range servers[:3] {
				s.Kill()
			}
		}},
		{"key deleted everywhere", func(t *testing.T, servers []*redistest.Server) {
			for _, s := range servers {
				require.NoError(t, s.Client(t).Del(bg(), electionKey(t, "e5")).Err())
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers, pools := realNodes(t, 5)
			// 250ms: a Campaign needs three answers in time, which a
			// loaded machine (two CPU hogs, two race builds of this
			// package) has not always given in 100ms.
			c := newClient(t, pools, redlock.WithNodeTimeout(250*time.Millisecond))
			ls, err := c.Campaign(bg(), "e5", "a", 2*time.Second)
			require.NoError(t, err)
			require.NoError(t, ls.Err())
			tc.lose(t, servers)
			select {
			case <-ls.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("the loss was not reported")
			}
			require.ErrorIs(t, ls.Err(), redlock.ErrLockLost)
			require.ErrorIs(t, ls.Proclaim(bg(), "late"), redlock.ErrNotHeld)
		})
	}
}

func TestRealElectionProclaim(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	// Patient: each Leader counts the records of every node, and one
	// answer past newClient's 1s (a loaded run) left "partial" on two of
	// the four answers, a minority.
	c := newPatientClient(t, pools)
	ls, err := c.Campaign(bg(), "e6", "v1", 10*time.Second)
	require.NoError(t, err)
	term := ls.Term()

	require.NoError(t, ls.Proclaim(bg(), "v2"))
	assert.Equal(t, "v2", ls.Value())
	assert.Equal(t, term, ls.Term(), "Proclaim keeps the term")
	ld, err := c.Leader(bg(), "e6")
	require.NoError(t, err)
	assert.Equal(t, "v2", ld.Value)
	assert.Equal(t, term, ld.Term)
	assert.Equal(t, uint64(1), ld.Rev)
	assert.Positive(t, ld.TTL)

	// A proclamation on a minority is not reported; on a majority it is.
	// (A late write of revision 1 keeps the higher revision set here.)
	for i, s := range servers[:3] {
		require.NoError(t, s.Client(t).HSet(bg(), leaderKey(t, "e6"), "value", "partial", "rev", "9").Err())
		ld, err = c.Leader(bg(), "e6")
		require.NoError(t, err)
		if i < 2 {
			assert.Equal(t, "v2", ld.Value, "on %d of 5 nodes", i+1)
		} else {
			assert.Equal(t, redlock.Leader{Value: "partial", Term: term, Rev: 9, TTL: ld.TTL}, ld)
		}
	}
	// With the record on a minority of the holders, the leader is still
	// reported, with the oldest value they have.
	for _, s := range servers[:3] {
		require.NoError(t, s.Client(t).Del(bg(), leaderKey(t, "e6")).Err())
	}
	ld, err = c.Leader(bg(), "e6")
	require.NoError(t, err)
	assert.Equal(t, redlock.Leader{Value: "v2", Term: term, Rev: 1, TTL: ld.TTL}, ld)

	require.NoError(t, ls.Resign(bg()))
	require.ErrorIs(t, ls.Proclaim(bg(), "v3"), redlock.ErrNotHeld)
	assert.Equal(t, "v2", ls.Value())
	require.ErrorIs(t, ls.Err(), redlock.ErrNotHeld)
	require.ErrorIs(t, ls.Resign(bg()), redlock.ErrNotHeld)
	<-ls.Done()
}

func TestRealLeaderNone(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	c := newPatientClient(t, pools) // it counts what each node holds
	_, err := c.Leader(bg(), "e7")
	require.ErrorIs(t, err, redlock.ErrNoLeader)

	// A lock key held on a minority only is nobody's leadership.
	for _, s := range servers[:2] {
		require.NoError(t, s.Client(t).Set(bg(), electionKey(t, "e7"), "tok", time.Minute).Err())
	}
	_, err = c.Leader(bg(), "e7")
	require.ErrorIs(t, err, redlock.ErrNoLeader)

	for _, s := range servers[:3] {
		s.Kill()
	}
	_, err = c.Leader(bg(), "e7")
	require.ErrorIs(t, err, redlock.ErrNoMajority)
	require.NotErrorIs(t, err, redlock.ErrNoLeader)
}

func TestRealLeaderCannotTell(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	c := newClient(t, pools, redlock.WithNodeTimeout(250*time.Millisecond))
	for _, s := range servers[3:] {
		s.Pause()
		t.Cleanup(s.Resume)
	}
	_, err := c.Leader(bg(), "e10")
	require.ErrorIs(t, err, redlock.ErrNoLeader, "3 answering nodes without the key: nobody can lead")

	// One answering node holds a token: with the two silent ones it could
	// be on a majority.
	require.NoError(t, servers[0].Client(t).Set(bg(), electionKey(t, "e10"), "tok", time.Minute).Err())
	_, err = c.Leader(bg(), "e10")
	require.ErrorIs(t, err, redlock.ErrNoMajority)
	require.NotErrorIs(t, err, redlock.ErrNoLeader)
}

// next receives from ch within d.
func next(t *testing.T, ch <-chan redlock.Leader, d time.Duration) redlock.Leader {
	t.Helper()
	select {
	case ld, ok := <-ch:
		require.True(t, ok, "the channel closed early")
		return ld
	case <-time.After(d):
		t.Fatalf("no leader change within %v", d)
		return redlock.Leader{}
	}
}

func TestRealObserve(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	a := newClient(t, pools)
	b := newClient(t, pools)
	// Observe's doc: a change arrives within about ObserveInterval plus one
	// read of the nodes (up to b's 1s node timeout), and the channel
	// closes within one read of ctx's end. The bounds allow one read more
	// (a read that could not tell for late answers is read again), so a
	// change never sent is caught, and a loaded machine's stall is not.
	const nt = time.Second // newClient's
	change := 2 * (redlock.ObserveInterval + nt)
	la, err := a.Campaign(bg(), "e8", "a1", 10*time.Second)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(bg())
	defer cancel()
	ch := b.ObserveLeader(ctx, "e8")
	ld := next(t, ch, change)
	assert.Equal(t, "a1", ld.Value, "the current leader, at once")
	assert.Equal(t, la.Term(), ld.Term)

	require.NoError(t, la.Proclaim(bg(), "a2"))
	ld = next(t, ch, change)
	assert.Equal(t, "a2", ld.Value)
	assert.Equal(t, la.Term(), ld.Term)

	require.NoError(t, la.Resign(bg())) // nobody waits
	assert.Equal(t, redlock.Leader{}, next(t, ch, change), "a lapse is the zero Leader")

	lb, err := b.Campaign(bg(), "e8", "b1", 10*time.Second)
	require.NoError(t, err)
	ld = next(t, ch, change)
	assert.Equal(t, "b1", ld.Value)
	assert.Equal(t, lb.Term(), ld.Term)
	assert.Greater(t, ld.Term, la.Term())

	// With a campaigner waiting, a Resign goes from one leader to the next.
	d := newClient(t, pools)
	rd := campaignAsync(bg(), d, "e8", "d1", 10*time.Second)
	waitCampaigner(t, servers, "e8")
	require.NoError(t, lb.Resign(bg()))
	ld = next(t, ch, change)
	assert.Equal(t, "d1", ld.Value, "no zero Leader between two leaders")
	assert.Greater(t, ld.Term, lb.Term())
	ldd := within(t, rd, time.Second)
	assert.Equal(t, ldd.Term(), ld.Term)

	cancel()
	start := time.Now()
	for range ch { // drain until closed
	}
	assert.Less(t, time.Since(start), 2*nt, "the channel closes within a read of ctx's end")
	require.NoError(t, ldd.Resign(bg()))
}

func TestRealObserveStopsOnClose(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 5)
	c, err := redlock.New(pools)
	require.NoError(t, err)
	ch := c.ObserveLeader(bg(), "e9")
	require.NoError(t, c.Close())
	_, ok := <-ch
	assert.False(t, ok, "Close ends Observe")
	_, ok = <-c.ObserveLeader(bg(), "e9")
	assert.False(t, ok, "Observe after Close is closed at once")
}

// Observe stays timely and correct with a minority of the nodes silent
// (SIGSTOPped): each change (a new leader, a proclaimed value, a lapse)
// still arrives within 1s, in term order, and the channel closes within 1s
// of ctx's end.
func TestRealObserveWithTwoNodesSilent(t *testing.T) {
	defer parallel(t).idle() // its cleanups wait out the calls to silent nodes
	servers, pools := realNodes(t, 5)
	for _, s := range servers[3:] {
		s.Pause()
		t.Cleanup(s.Resume)
	}
	// The observer's node timeout is the claim's; the campaigner's is
	// newClient's (1s): each of its calls needs all three live nodes, and
	// at 250ms a Resign failed on a loaded machine (make test-loaded:
	// "lock not released: 2 of 5 nodes agreed ... node 1: no answer
	// within the node timeout"), with no change to observe.
	a := newClient(t, pools)
	b := newClient(t, pools, redlock.WithNodeTimeout(250*time.Millisecond))
	ctx, cancel := context.WithCancel(bg())
	defer cancel()
	ch := b.ObserveLeader(ctx, "e-silent")

	la, err := a.Campaign(bg(), "e-silent", "a1", 5*time.Second)
	require.NoError(t, err)
	ld := next(t, ch, time.Second)
	assert.Equal(t, "a1", ld.Value)
	assert.Equal(t, la.Term(), ld.Term)

	require.NoError(t, la.Proclaim(bg(), "a2"))
	ld = next(t, ch, time.Second)
	assert.Equal(t, "a2", ld.Value)
	assert.Equal(t, la.Term(), ld.Term, "a proclamation keeps the term")

	require.NoError(t, la.Resign(bg()))
	assert.Equal(t, redlock.Leader{}, next(t, ch, time.Second), "a lapse is the zero Leader")

	lb, err := a.Campaign(bg(), "e-silent", "b1", 5*time.Second)
	require.NoError(t, err)
	ld = next(t, ch, time.Second)
	assert.Equal(t, "b1", ld.Value)
	assert.Greater(t, ld.Term, la.Term())

	cancel()
	start := time.Now()
	for range ch {
	}
	assert.Less(t, time.Since(start), time.Second, "the channel closes within 1s of ctx's end")
	require.NoError(t, lb.Resign(bg()))
}

// A Proclaim that a majority did not answer (paused) reports that its
// outcome is unknown: once the paused nodes resume they record it, and
// Leader reports the new value, as the error warned; a later Proclaim
// settles what observers see.
func TestRealProclaimWithAMajorityPausedSaysTheOutcomeIsUnknown(t *testing.T) {
	servers, pools := realNodes(t, 5)
	// newClient's 1s node timeout: the resumed nodes must answer the
	// reads, Proclaim and Resign after the pause within it, and with 100ms
	// three of them did not on a loaded machine (two CPU hogs, make test
	// and a second race build of this package). The paused nodes miss any.
	c := newClient(t, pools)
	ls, err := c.Campaign(bg(), "px", "first", 5*time.Second)
	require.NoError(t, err)
	for _, s := range servers[:3] {
		s.Pause()
	}
	err = ls.Proclaim(bg(), "second")
	for _, s := range servers[:3] {
		s.Resume()
	}
	require.ErrorIs(t, err, redlock.ErrNotProclaimed)
	assert.Contains(t, err.Error(), "outcome is unknown")
	assert.Equal(t, "first", ls.Value(), "Value keeps the last value a majority confirmed")
	// The resumed nodes run the writes they had received; read until the
	// record is there or 5s (five node timeouts) pass.
	var ld redlock.Leader
	deadline := time.Now().Add(5 * time.Second)
	for ld.Value != "second" && time.Now().Before(deadline) {
		ld, err = c.Leader(bg(), "px")
		time.Sleep(10 * time.Millisecond)
	}
	assert.Equal(t, "second", ld.Value, "the paused nodes recorded it once resumed, as the error said they might (last read: %v)", err)
	require.NoError(t, ls.Proclaim(bg(), "third"))
	ld, err = c.Leader(bg(), "px")
	require.NoError(t, err)
	assert.Equal(t, "third", ld.Value)
	require.NoError(t, ls.Resign(bg()))
}

package redlock_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/pooltest"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// A restarted node's return waits out every Client's node timeout, not the
// reader's own (issue 58, item 2; docs/safety.md, "A restarted node's
// return"). Five unpersisted nodes. A, with the longest node timeout
// allowed, tries a 30s lock: node 0 grants at once, A's SETs to nodes 1 and
// 2 are held in flight (a gate in A's pools), nodes 3 and 4 refuse A's
// connections. Node 0 restarts empty. B (newClient's 1s node timeout) votes
// on other keys until it has read node 0's peers' ceilings and counted it
// again (NodeReturned), and only then do A's SETs land; or A's attempt ends
// first, without them. Had B read the ceilings while A's grants were in
// flight (before the fix: its own node timeout after the restart), they
// would be empty, node 0 would count at once, A would then count nodes 0
// (forgotten), 1 and 2, and B would take the key with nodes 0, 3 and 4.
// With the fix the read waits for NodeTimeoutLimit, by which A's attempt
// has decided without the held grants.
func TestRealRestartedNodeWaitsOutEveryClientsNodeTimeout(t *testing.T) {
	parallel(t)
	const ttl = 30 * time.Second
	servers, pools := realNodes(t, 5)
	wrapped := make([]pool.Pool, len(pools))
	faults := make([]*pooltest.Faulty, len(pools))
	for i, p := range pools {
		faults[i] = pooltest.Wrap(p)
		wrapped[i] = faults[i]
	}
	release1, release2 := faults[1].Hold(), faults[2].Hold()
	inFlight := func() { release1(); release2() }
	defer inFlight() // before A's Close, which waits for its calls
	faults[3].Fail(errDown)
	faults[4].Fail(errDown)

	a := newClient(t, wrapped, redlock.WithNodeTimeout(redlock.NodeTimeoutLimit))
	type outcome struct {
		l   *redlock.Lock
		err error
	}
	decided := make(chan outcome, 1)
	go func() {
		l, err := a.TryLock(bg(), "held", ttl)
		decided <- outcome{l, err}
	}()
	redistest.WaitFor(t, redlock.NodeTimeoutLimit, "node 0 granted A", func() (bool, string) {
		v, _ := servers[0].Client(t).Get(bg(), "held").Result()
		return v != "", "node 0 holds " + v
	})
	restarted := time.Now()
	servers[0].Kill()
	servers[0].Restart(t)
	rewarm(t, pools[:1])

	watch, returned := returns()
	b := newClient(t, pools, watch)
	// Until node 0 returns or A's attempt ends, B's traffic meets node 0
	// and probes its horizon: the settle time, then a ceiling read of a
	// quorum of its peers (none holds anything of A's while A waits), then
	// its drift allowance and margin. A's attempt ends at its node timeout
	// unless its grants land: bound with room for a loaded machine.
	bound := 2 * redlock.NodeTimeoutLimit
	deadline := time.NewTimer(time.Until(restarted.Add(bound)))
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if l, err := b.TryLock(bg(), "other", time.Second); err == nil {
			releasedOrLate(t, l.Unlock(bg()), "B's Unlock of other")
		}
		select {
		case got := <-decided:
			// A decided without its grants in flight: the read that lets
			// node 0 back comes after them (and finds A's ceiling).
			require.ErrorIs(t, got.err, redlock.ErrNotObtained, "A's attempt ended before node 0 returned: its held grants did not count")
			t.Logf("A's attempt ended %v after node 0's restart, node 0 not back yet: %v", time.Since(restarted).Round(time.Millisecond), got.err)
			return
		case <-returned:
			// B has read node 0's peers' ceilings: A's grants land now,
			// and A decides on them.
			inFlight()
			got := <-decided
			if got.err != nil { // A had decided without them meanwhile
				require.ErrorIs(t, got.err, redlock.ErrNotObtained, "A's attempt")
				return
			}
			lb, err := b.TryLock(bg(), "held", ttl)
			if err == nil && time.Now().Before(got.l.Until()) {
				t.Fatalf("B holds the key A holds (A valid for %v more): node 0 counted %v after its restart, before A's grants landed; B holds %d node(s)",
					time.Until(got.l.Until()).Round(time.Millisecond), time.Since(restarted).Round(time.Millisecond), realHolders(t, servers, "held", lb.Token()))
			}
			require.ErrorIs(t, err, redlock.ErrNotObtained, fmt.Sprintf("A holds the key until %v", got.l.Until()))
			return
		case <-deadline.C:
			t.Fatalf("neither A decided nor node 0 returned %v after its restart: B saw %v", bound, b.NodeStates()[0])
		case <-tick.C:
		}
	}
}

package redlocktest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// Nodes is a set of independent in-process Redis nodes, owned by the
// testing.TB given to New. Its methods are safe for concurrent use.
type Nodes struct {
	t     testing.TB
	nodes []*node
	pools []pool.Pool
}

// New starts n in-process Redis nodes (n >= 1; 3 or 5 as in production) and
// returns them, all up and empty. At t's cleanup their connections are
// closed and the nodes stopped, after the cleanups registered later (such
// as the Clients of Client) have run. n < 1 fails the test with t.Fatalf.
// The kit calls only t's Helper, Cleanup, Errorf and Fatalf.
func New(t testing.TB, n int) *Nodes {
	t.Helper()
	if n < 1 {
		t.Fatalf("redlocktest.New: the number of nodes must be at least 1, got %d", n)
		return nil
	}
	ns := &Nodes{t: t}
	for i := range n {
		nd := newNode(fmt.Sprintf("redlocktest-%d:6379", i))
		t.Cleanup(nd.close)
		ns.nodes = append(ns.nodes, nd)
		ns.pools = append(ns.pools, nd.pool)
		// One connection, dialled now: a Client's first call does not pay
		// the dial and handshake within its node timeout (the library's
		// default, short for short TTLs), which a loaded -race run can
		// outlast on every node at once.
		_ = nd.client.Ping(context.Background()).Err()
	}
	return ns
}

// Pools returns one pool.Pool per node, node i at index i, for redlock.New
// or other code that takes pools. The slice is a copy; the Pools stay
// usable until t's cleanup, which closes them (their Close is a no-op).
func (n *Nodes) Pools() []pool.Pool {
	return append([]pool.Pool(nil), n.pools...)
}

// Client returns a redlock.Client over every node, closed at t's cleanup
// (redlock.Client.Close: locks still held are left to their TTL). Its
// options are opts alone, the library's defaults otherwise, so that it
// accepts exactly the TTLs and options a Client over real nodes accepts.
// Options that redlock.New refuses fail the test with t.Fatalf. Each call
// returns a new Client, as another process or replica of the same service
// would have.
func (n *Nodes) Client(opts ...redlock.Option) *redlock.Client {
	n.t.Helper()
	c, err := redlock.New(n.Pools(), opts...)
	if err != nil {
		n.t.Fatalf("redlocktest: Client: %v", err)
		return nil
	}
	n.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Stop takes node i down, as a crashed Redis process: its open connections
// break (a command in flight fails) and new ones are refused (a dial fails
// with ECONNREFUSED) until Start(i). Its data stays, and its keys keep
// expiring by the clock. Stopping a stopped node does nothing. An i out of
// range fails the test with t.Fatalf.
//
// A lock call, an Unlock or an Extend returns as soon as a majority
// decided, so its command to the other nodes may still be on its way: one
// that had not reached node i before Stop may reach it after Start, and one
// that Stop cut off never lands (a release then leaves the key on node i
// until its TTL). To stop a node in a known state, first wait until the
// call landed everywhere (Client.Status, or synctest.Wait in a bubble).
func (n *Nodes) Stop(i int) {
	n.t.Helper()
	if nd := n.node("Stop", i); nd != nil {
		nd.stop()
	}
}

// Start brings node i back after Stop, at the same address, with the data
// it had less what expired meanwhile, as a node that persists every write
// (appendfsync always). A Client's next call to it reconnects: connections
// broken by Stop are not reused (on Linux and the BSDs, where go-redis
// checks an idle connection before reusing it; elsewhere each fails one
// command first).
// Starting a running node does nothing. An i out of range fails the test
// with t.Fatalf.
func (n *Nodes) Start(i int) {
	n.t.Helper()
	if nd := n.node("Start", i); nd != nil {
		nd.start()
	}
}

// SetClock gives node i a clock of its own: from its next command on, the
// node reads the time as clock(time.Now()), both for TIME (which the
// lock's scripts read) and for its keys' expiry, whose TTLs count down by
// how far that clock moved between two commands. So a clock that runs
// fast or jumps forward ends keys early, as it would on Redis. clock must
// be a function of its argument alone and never go backwards; a nil clock
// is the shared clock again. Nodes without SetClock follow time.Now (the
// bubble's clock under synctest). An i out of range fails the test with
// t.Fatalf.
func (n *Nodes) SetClock(i int, clock func(now time.Time) time.Time) {
	n.t.Helper()
	nd := n.node("SetClock", i)
	if nd == nil {
		return
	}
	if clock == nil {
		// Not back to no clock at all: the server keeps the last time set
		// until it is set again, so a clock must be read at every command.
		clock = func(now time.Time) time.Time { return now }
	}
	nd.clock.Store(&clock)
}

// node returns node i, or fails the test and returns nil.
func (n *Nodes) node(op string, i int) *node {
	n.t.Helper()
	if i < 0 || i >= len(n.nodes) {
		n.t.Fatalf("redlocktest: %s(%d): no such node, the nodes are 0 to %d", op, i, len(n.nodes)-1)
		return nil
	}
	return n.nodes[i]
}

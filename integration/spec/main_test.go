package spec_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

// TestMain runs the tests with reuse of clusters: the scenarios on five
// healthy nodes share one set, reset between them (cluster.Reuse). Then it
// checks that no goroutine outlives them, except toxiproxy's stub stuck
// forwarding a chunk for a connection whose node was killed with a request
// in flight: its send cannot be interrupted and nothing drains it, even
// after the proxy is closed (see the chaos package's TestMain).
func TestMain(m *testing.M) {
	code := cluster.Reuse(m.Run)
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run")); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// nodeTimeout bounds each node call of the clients under test. A healthy
// node answers in a millisecond or two on an idle machine; on a shared
// 2-core machine running the race detector, compilers and Docker's own work
// (a container kill or start costs a burst of CPU), replies were seen to
// take over 100ms. The library's default for the short TTLs used here
// (ttl/20) suits production, not such a machine.
const nodeTimeout = 500 * time.Millisecond

// slowBound is the generous limit for an operation that must not wait for a
// faulty node beyond the node timeout: a call waits at most two node
// timeouts in sequence (the attempt and its cleanup).
const slowBound = 10 * nodeTimeout

// newClient returns a client over fresh pools of c, closed when t ends.
func newClient(t *testing.T, c *cluster.Cluster, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	return c.NewClient(t, append([]redlock.Option{redlock.WithNodeTimeout(nodeTimeout)}, opts...)...)
}

// key returns a lock key of the test's own.
func key(t *testing.T) string {
	return "it:" + strings.ReplaceAll(t.Name(), "/", ":")
}

// drift is the validity the client withholds for clock drift on ttl, with
// the default drift factor.
func drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*redlock.DefaultDriftFactor) + 2*time.Millisecond
}

// peek reads key on node i directly.
func peek(t *testing.T, c *cluster.Cluster, i int, key string) cluster.Entry {
	t.Helper()
	e, err := c.Node(i).Peek(context.Background(), key)
	require.NoError(t, err)
	return e
}

// requireValues checks the value of key on every node; "" means absent.
func requireValues(t *testing.T, c *cluster.Cluster, key string, want ...string) {
	t.Helper()
	require.Len(t, want, c.Len())
	got := make([]string, c.Len())
	for i := range got {
		got[i] = peek(t, c, i, key).Value
	}
	require.Equal(t, want, got, "values of %s per node", key)
}

// stragglerBound bounds how long after an operation returned its calls to
// the nodes that were not in its majority can still land. Each call ends
// within the node timeout; one written before that lands when its node
// reads it, which on a loaded machine (Docker's bursts of CPU at a
// container's kill or start) was seen to take hundreds of milliseconds.
// Ten node timeouts; the bound costs time only when a call never lands.
const stragglerBound = 10 * nodeTimeout

// eventuallyValue waits until each of nodes (all when none are named)
// holds value under key, "" meaning absent. Operations return once a
// majority has answered; the other nodes' commands may still be on their
// way (stragglerBound).
func eventuallyValue(t *testing.T, c *cluster.Cluster, key, value string, nodes ...int) {
	t.Helper()
	if len(nodes) == 0 {
		for i := range c.Len() {
			nodes = append(nodes, i)
		}
	}
	redistest.WaitFor(t, stragglerBound, fmt.Sprintf("nodes %v to hold %s = %q", nodes, key, value), func() (bool, string) {
		ok, seen := true, make([]string, len(nodes))
		for j, i := range nodes {
			v := peek(t, c, i, key).Value
			ok = ok && v == value
			seen[j] = fmt.Sprintf("node %d: %q", i, v)
		}
		return ok, strings.Join(seen, ", ")
	})
}

// eventuallyAbsent waits until none of nodes (all when none are named)
// holds key.
func eventuallyAbsent(t *testing.T, c *cluster.Cluster, key string, nodes ...int) {
	t.Helper()
	eventuallyValue(t, c, key, "", nodes...)
}

// values returns v n times.
func values(v string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// each runs op on the given nodes, failing t on error.
func each(t *testing.T, c *cluster.Cluster, nodes []int, op func(*cluster.Node) error) {
	t.Helper()
	for _, i := range nodes {
		require.NoError(t, op(c.Node(i)), "node %d", i)
	}
}

// resetAfter heals every node when t ends, so that subtests sharing a
// cluster start from health.
func resetAfter(t *testing.T, c *cluster.Cluster) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, c.Reset(ctx))
		// Every test uses keys of its own, so no lock a node forgot in a
		// restart matters to the next: declare the nodes fresh, so that
		// the restart quarantine does not hold them out.
		for _, n := range c.Nodes() {
			require.NoError(t, n.MarkFresh(ctx))
		}
	})
}

// timed runs f and returns how long it took.
func timed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// quorumError extracts the *redlock.QuorumError of err.
func quorumError(t *testing.T, err error) *redlock.QuorumError {
	t.Helper()
	var qe *redlock.QuorumError
	require.ErrorAs(t, err, &qe)
	return qe
}

// failedNodes maps each node a quorum error names as failed to its cause; a
// node that had not answered when the call decided (redlock.ErrPending) has
// not failed.
func failedNodes(qe *redlock.QuorumError) map[int]error {
	out := make(map[int]error)
	for _, n := range qe.Nodes {
		if !errors.Is(n.Err, redlock.ErrPending) {
			out[n.Node] = n.Err
		}
	}
	return out
}

// isTimeout reports an error caused by a deadline: a node's
// (redlock.ErrNodeTimeout), the context's, or the socket's that go-redis
// derives from it.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, redlock.ErrNodeTimeout) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/redlock"
)

const leaderUsage = `Usage: redlock leader [--nodes URLS] --election NAME [--timeout D]

Shows who leads the election NAME (Client.Campaign in the library): the
leader's value and term, read from every node. A leader is one token on the
election's key (a name under the reserved prefix "redlock:", apart from
every lock key) on a majority of the nodes, with its value recorded there.
It only reads; it never changes anything.

Flags:
  --nodes URLS      comma-separated node URLs: redis://host:port,
                    rediss://host:port (TLS), or a bare host:port
                    (default: $REDLOCK_NODES)
  --election NAME   the election's name
  --timeout D       how long to wait for each node, at most 5s (default 1s)

Exit codes:
  0    a leader: its value and term are printed
  1    no leader: nobody holds the election on a majority of the nodes
  2    bad flags, or a bad URL
  69   a majority of the nodes could not be reached, refused the
       credentials, or does not count (restart quarantine): see
       "redlock nodes check"
`

// leaderFlags registers leader's flags on fs.
func leaderFlags(fs *flag.FlagSet) (nodes *urlList, election *string, timeout *durationFlag) {
	nodes = nodesFlag(fs, "node URLs")
	election = fs.String("election", "", "the election's name")
	timeout = durationVar(fs, "timeout", probeTimeout, "how long to wait for each node")
	return nodes, election, timeout
}

// leaderMain is "redlock leader".
func leaderMain(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("leader")
	nodes, election, timeout := leaderFlags(fs)
	if code, ok := parseFlags(fs, "leader", leaderUsage, args, stdout, stderr); !ok {
		return code
	}
	switch {
	case fs.NArg() > 0:
		return usageError(stderr, "leader", "unexpected argument %q", fs.Arg(0))
	case *election == "":
		return usageError(stderr, "leader", "--election is required")
	case timeout.d <= 0:
		return usageError(stderr, "leader", "--timeout must be positive, got %v", timeout.d)
	case timeout.d > redlock.NodeTimeoutLimit:
		return usageError(stderr, "leader", "%s", nodeTimeoutTooLong("--timeout", timeout.d))
	}
	urls, err := nodes.fromEnv()
	if err != nil {
		return usageError(stderr, "leader", "%v", err)
	}
	pools, err := openNodes(urls)
	if err != nil {
		return usageError(stderr, "leader", "%v", err)
	}
	defer closeNodes(pools)
	c, err := redlock.New(pools, redlock.WithNodeTimeout(timeout.d))
	if err != nil {
		return usageError(stderr, "leader", "%v", err)
	}
	defer c.Close()
	ld, err := c.Leader(ctx, *election)
	if errors.Is(err, redlock.ErrNoLeader) {
		// Nobody leads, or nobody could: nodes that answered the read but
		// whose yes would not count (quarantined) make no majority.
		if out := notCounting(ctx, c, *election); out != "" {
			fmt.Fprintf(stderr, "redlock leader: %s; no leader can be elected\n", out)
			unavailableHint(stderr, "redlock leader")
			return exitUnavailable
		}
	}
	return showLeader(stdout, stderr, *election, len(pools), c.Quorum(), ld, err)
}

// notCounting reads the election's key (Client.Status) and says how many of
// the nodes count now, and why the others do not, when they make no
// majority; "" when they do, or the read fails.
func notCounting(ctx context.Context, c *redlock.Client, election string) string {
	key, err := keyspace.Election(election)
	if err != nil {
		return ""
	}
	st, err := c.Status(ctx, key)
	if err != nil && !errors.Is(err, redlock.ErrNoMajority) {
		return ""
	}
	v := newKeyView(st)
	if v.counting() >= v.Needed {
		return ""
	}
	return fmt.Sprintf("%d of %d nodes count now (%s), %d needed", v.counting(), v.Total, v.outOfCount(), v.Needed)
}

// showLeader prints Leader's answer about election, on total nodes of which
// a leader needs quorum, and returns the exit code.
func showLeader(stdout, stderr io.Writer, election string, total, quorum int, ld redlock.Leader, err error) int {
	if err != nil && !errors.Is(err, redlock.ErrNoLeader) {
		fmt.Fprintf(stderr, "redlock leader: %v\n", err)
		unavailableHint(stderr, "redlock leader", append(nodeErrors(err), err)...)
		return exitUnavailable
	}
	fmt.Fprintf(stdout, "election %q on %d nodes (a leader needs %d)\n", election, total, quorum)
	if err != nil {
		fmt.Fprintln(stdout, "leader: none")
		return exitNoLeader
	}
	fmt.Fprintf(stdout, "leader: %s\nterm: %d\nrevision: %d\nttl: %s\n", ld.Value, ld.Term, ld.Rev, ttlString(ld.TTL))
	return exitOK
}

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

const statusUsage = `Usage: redlock status [--nodes URLS] --key KEY [--timeout D]

Shows, for each node, whether it answers, which token holds KEY and for how
much longer, then whether one token holds a majority: whether the lock is
held. It only reads; it never changes the key.

Flags:
  --nodes URLS   comma-separated node URLs: redis://host:port,
                 rediss://host:port (TLS), or a bare host:port
                 (default: $REDLOCK_NODES)
  --key KEY      the lock's key
  --timeout D    how long to wait for each node (default 1s)

Exit codes:
  0    a majority of the nodes answered, whether or not the key is held
  2    bad flags, or a bad URL
  69   a majority of the nodes could not be reached
`

// statusFlags registers status's flags on fs.
func statusFlags(fs *flag.FlagSet) (nodes *urlList, key *string, timeout *durationFlag) {
	nodes = nodesFlag(fs, "node URLs")
	key = fs.String("key", "", "the lock's key")
	timeout = durationVar(fs, "timeout", probeTimeout, "how long to wait for each node")
	return nodes, key, timeout
}

// statusMain is "redlock status".
func statusMain(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("status")
	nodes, key, timeout := statusFlags(fs)
	if code, ok := parseFlags(fs, "status", statusUsage, args, stdout, stderr); !ok {
		return code
	}
	switch {
	case fs.NArg() > 0:
		return usageError(stderr, "status", "unexpected argument %q", fs.Arg(0))
	case *key == "":
		return usageError(stderr, "status", "--key is required")
	case timeout.d <= 0:
		return usageError(stderr, "status", "--timeout must be positive, got %v", timeout.d)
	}
	urls, err := nodes.fromEnv()
	if err != nil {
		return usageError(stderr, "status", "%v", err)
	}
	pools, err := openNodes(urls)
	if err != nil {
		return usageError(stderr, "status", "%v", err)
	}
	defer closeNodes(pools)

	states := probe(ctx, pools, *key, timeout.d)
	t := tallyStates(states)
	fmt.Fprintf(stdout, "lock %q on %d nodes (a lock needs %d)\n", *key, t.total, t.quorum)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADDRESS\tSTATE\tTOKEN\tTTL")
	for _, s := range states {
		switch {
		case s.unreachable():
			fmt.Fprintf(tw, "%d\t%s\tunreachable\t%s\t\n", s.Node, s.Addr, shortErr(s.Err))
		case s.Err != nil:
			fmt.Fprintf(tw, "%d\t%s\terror\t%s\t\n", s.Node, s.Addr, s.Err)
		case s.Held:
			fmt.Fprintf(tw, "%d\t%s\theld\t%s\t%s\n", s.Node, s.Addr, s.Token, ttlString(s.TTL))
		default:
			fmt.Fprintf(tw, "%d\t%s\tfree\t-\t-\n", s.Node, s.Addr)
		}
	}
	_ = tw.Flush()
	fmt.Fprintln(stdout, summary(t))
	if t.majorityUnreachable() {
		fmt.Fprintf(stderr, "redlock status: %d of %d nodes unreachable; no lock can be taken or trusted\n", t.unreachable, t.total)
		return exitUnavailable
	}
	return exitOK
}

// summary is the last line of status: is the lock held by a majority.
func summary(t tally) string {
	yes := "no"
	if t.held >= t.quorum {
		yes = "yes"
	}
	s := fmt.Sprintf("summary: held on %d of %d nodes, majority: %s (%d needed)", t.held, t.total, yes, t.quorum)
	if t.tokens > 1 {
		s += fmt.Sprintf("; %d different tokens", t.tokens)
	}
	if t.unreachable > 0 {
		s += fmt.Sprintf("; %d unreachable", t.unreachable)
	}
	return s
}

func ttlString(d time.Duration) string {
	if d < 0 {
		return "no expiry"
	}
	return d.String()
}

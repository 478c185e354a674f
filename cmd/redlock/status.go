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
much longer; then whether the lock is held (one token on a majority of the
nodes) or free, and, for a lock taken by "redlock run", who holds it: host,
pid, since when, which command. It only reads; it never changes anything.

Flags:
  --nodes URLS   comma-separated node URLs: redis://host:port,
                 rediss://host:port (TLS), or a bare host:port
                 (default: $REDLOCK_NODES)
  --key KEY      the lock's key
  --timeout D    how long to wait for each node (default 1s)

Exit codes:
  0    held: one token holds KEY on a majority of the nodes
  1    free: no node that answered has KEY, and those that did not answer
       are too few to hold a lock
  2    bad flags, or a bad URL
  3    neither: KEY is on some nodes but no token is on a majority (a lock
       being taken, released or expiring, or the leftovers of a failed try)
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
	return showStatus(stdout, stderr, *key, probe(ctx, pools, *key, timeout.d))
}

// showStatus prints what the nodes said about key, and the verdict, and returns
// the verdict's exit code.
func showStatus(stdout, stderr io.Writer, key string, states []nodeState) int {
	t := tallyStates(states)
	fmt.Fprintf(stdout, "lock %q on %d nodes (a lock needs %d)\n", key, t.total, t.quorum)
	printNodes(stdout, states)
	v := t.verdict()
	fmt.Fprintln(stdout, summary(t, v))
	switch v {
	case held:
		who := "unknown: no record (the lock was not taken by redlock run)"
		if h, ok := recordFor(states, t.token); ok {
			who = h.describe(time.Now())
		}
		fmt.Fprintln(stdout, "holder: "+who)
		return exitOK
	case free:
		return exitFree
	case unavailable:
		fmt.Fprintf(stderr, "redlock status: %d of %d nodes unreachable; no lock can be taken or trusted\n", t.unreachable, t.total)
		return exitUnavailable
	default:
		return exitNeither
	}
}

// printNodes prints one line per node.
func printNodes(stdout io.Writer, states []nodeState) {
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
}

// verdict is what status concludes about a lock.
type verdict int

const (
	// held: one token is on a majority of the nodes.
	held verdict = iota
	// free: no node that answered has the key, and those that did not
	// answer are too few to hold a lock.
	free
	// neither: keys on some nodes, no token on a majority, or too many
	// nodes answered with errors to tell.
	neither
	// unavailable: a majority of the nodes did not answer.
	unavailable
)

// verdict decides from the tally.
func (t tally) verdict() verdict {
	switch {
	case t.held >= t.quorum:
		return held
	case t.majorityUnreachable():
		return unavailable
	case t.holding == 0 && len(t.failed) < t.quorum:
		return free
	default:
		return neither
	}
}

// summary is the verdict in one line.
func summary(t tally, v verdict) string {
	var s string
	switch v {
	case held:
		s = fmt.Sprintf("summary: held on %d of %d nodes (%d needed)", t.held, t.total, t.quorum)
	case free:
		s = "summary: free"
	case unavailable:
		s = fmt.Sprintf("summary: unknown: %d of %d nodes answered, %d needed", t.total-t.unreachable, t.total, t.quorum)
	default:
		s = fmt.Sprintf("summary: not held: the key is on %d of %d nodes, but no token on a majority (%d needed)",
			t.holding, t.total, t.quorum)
	}
	if t.tokens > 1 {
		s += fmt.Sprintf("; %d different tokens", t.tokens)
	}
	if t.unreachable > 0 && v != unavailable {
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

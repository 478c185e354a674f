package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

const statusUsage = `Usage: redlock status [--nodes URLS] --key KEY [--timeout D] [--json]

Shows, for each node, whether it answers, what KEY holds there (a lock,
readers, permits, or a key of another type), which token or how many
readers or permits hold it and for how much longer; then whether KEY is
held or free, and, for a lock taken by "redlock run", who holds it: host,
pid, since when, which command. It only reads; it never changes anything.

Flags:
  --nodes URLS   comma-separated node URLs: redis://host:port,
                 rediss://host:port (TLS), or a bare host:port
                 (default: $REDLOCK_NODES)
  --key KEY      the lock's key
  --timeout D    how long to wait for each node, at most 5s (default 1s)
  --json         print one JSON object instead of the table: the key, the
                 verdict and summary, and one entry per node (docs/cli.md)

Exit codes:
  0    held: a lock by one token on a majority of the nodes, or readers or
       permits with at least one live hold on each of a majority
  1    free: no node that answered has KEY (a key reserved for a waiting
       LockAll, state "reserved", is free), and those that did not
       answer are too few to hold a lock
  2    bad flags, or a bad URL
  3    neither: KEY is on some nodes but not held on a majority (a lock
       being taken, released or expiring, the leftovers of a failed try),
       or it is a key of another type, not a lock
  69   no majority of the nodes counts: they could not be reached,
       refused the credentials, or are in the restart quarantine (a line
       per quarantined node says for how long); see "redlock nodes check"
`

// statusOptions are status's flags.
type statusOptions struct {
	nodes   *urlList
	key     *string
	timeout *durationFlag
	json    *bool
}

// statusFlags registers status's flags on fs.
func statusFlags(fs *flag.FlagSet) statusOptions {
	return statusOptions{
		nodes:   nodesFlag(fs, "node URLs"),
		key:     fs.String("key", "", "the lock's key"),
		timeout: durationVar(fs, "timeout", probeTimeout, "how long to wait for each node"),
		json:    fs.Bool("json", false, "print one JSON object"),
	}
}

// statusMain is "redlock status". What the key holds, and whether it is
// held, is the library's Status; the CLI adds the holder record of a lock
// taken by run (holder.go), read only when a lock is held.
func statusMain(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("status")
	o := statusFlags(fs)
	nodes, key, timeout := o.nodes, o.key, o.timeout
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
	case timeout.d > redlock.NodeTimeoutLimit:
		return usageError(stderr, "status", "%s", nodeTimeoutTooLong("--timeout", timeout.d))
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
	c, err := redlock.New(pools, redlock.WithNodeTimeout(timeout.d))
	if err != nil { // the same node twice
		return usageError(stderr, "status", "%s", strings.TrimPrefix(err.Error(), "redlock: "))
	}
	defer c.Close()
	// Fewer than a majority answering is a verdict (unavailable, or
	// neither), not a failure of the command: st still says what each
	// node said. Any other error is an argument the library refused.
	st, err := c.Status(ctx, *key)
	if err != nil && !errors.Is(err, redlock.ErrNoMajority) {
		return usageError(stderr, "status", "%s", strings.TrimPrefix(err.Error(), "redlock: "))
	}
	who := func() (holder, bool) { return holderOf(ctx, pools, st, timeout.d) }
	if *o.json {
		return showStatusJSON(stdout, stderr, st, who)
	}
	return showStatus(stdout, stderr, st, who)
}

// holderOf returns the holder record of the lock st reports, from the nodes
// that hold st.Token. It reads them after Status: a record counts only on a
// node that holds its token in the same read (recordFor), so a lock
// released and taken anew in between shows no record, never another
// holder's.
func holderOf(ctx context.Context, pools []pool.Pool, st redlock.KeyStatus, timeout time.Duration) (holder, bool) {
	var holding []pool.Pool
	for _, n := range st.Nodes {
		if n.Err == nil && n.Kind == kindLock && n.Token == st.Token {
			holding = append(holding, pools[n.Node])
		}
	}
	return recordFor(probe(ctx, holding, st.Key, timeout), st.Token)
}

// showStatus prints what the nodes said about the key, and the verdict,
// and returns the verdict's exit code. who is called only for a held lock.
func showStatus(stdout, stderr io.Writer, st redlock.KeyStatus, who func() (holder, bool)) int {
	v := newKeyView(st)
	fmt.Fprintln(stdout, v.header())
	printNodes(stdout, st.Nodes)
	printQuarantined(stdout, st.Nodes)
	if v.Kind == kindReaders || v.Kind == kindPermits {
		fmt.Fprintln(stdout, v.leases())
	}
	vd := v.verdict()
	fmt.Fprintln(stdout, v.summary(vd))
	if vd == held && v.Kind == kindLock {
		desc := "unknown: no record (the lock was not taken by redlock run)"
		if h, ok := who(); ok {
			desc = h.describe(time.Now())
		}
		fmt.Fprintln(stdout, "holder: "+desc)
	}
	return verdictExit(stderr, v, vd)
}

// verdictExit returns the exit code of a verdict, saying on stderr why no
// lock can be trusted when a majority of the nodes is unreachable.
func verdictExit(stderr io.Writer, v keyView, vd verdict) int {
	switch vd {
	case held:
		return exitOK
	case free:
		return exitFree
	case unavailable:
		if v.refused+v.quarantined == 0 {
			fmt.Fprintf(stderr, "redlock status: %d of %d nodes unreachable; no lock can be taken or trusted\n", v.unreachable, v.Total)
		} else {
			fmt.Fprintf(stderr, "redlock status: %d of %d nodes count now (%s), %d needed; no lock can be taken\n",
				v.counting(), v.Total, v.outOfCount(), v.Needed)
		}
		var errs []error
		for _, n := range v.Nodes {
			errs = append(errs, n.Err)
		}
		unavailableHint(stderr, "redlock status", errs...)
		return exitUnavailable
	default:
		return exitNeither
	}
}

// nodeRow is what status says about one node, in the table and in JSON.
type nodeRow struct {
	// state is unreachable, error, free, reserved (free, but kept for a
	// waiting LockAll: redlock.NodeStatus.Reserved), or what the node
	// holds (stateOf).
	state string
	// kind and token are those of the key on the node, "" when the node
	// does not have it or did not answer.
	kind, token string
	// ttl is the key's remaining TTL (-1: no expiry); present tells
	// whether the node has the key at all.
	ttl     time.Duration
	present bool
}

// rowOf reads one node's status.
func rowOf(n redlock.NodeStatus) nodeRow {
	switch {
	case n.Err != nil && unreachable(n.Err):
		return nodeRow{state: "unreachable"}
	case n.Err != nil:
		return nodeRow{state: "error"}
	case n.Reserved:
		return nodeRow{state: "reserved", ttl: n.TTL, present: true}
	case n.Kind == "":
		return nodeRow{state: "free"}
	default:
		return nodeRow{state: stateOf(n), kind: n.Kind, token: n.Token, ttl: n.TTL, present: true}
	}
}

// printNodes prints one line per node.
func printNodes(stdout io.Writer, nodes []redlock.NodeStatus) {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADDRESS\tSTATE\tKIND\tTOKEN\tTTL")
	for _, n := range nodes {
		r := rowOf(n)
		switch r.state {
		case "unreachable":
			fmt.Fprintf(tw, "%d\t%s\tunreachable\t-\t%s\t\n", n.Node, n.Addr, shortErr(n.Err))
		case "error":
			fmt.Fprintf(tw, "%d\t%s\terror\t-\t%s\t\n", n.Node, n.Addr, n.Err)
		case "free":
			fmt.Fprintf(tw, "%d\t%s\tfree\t-\t-\t-\n", n.Node, n.Addr)
		case "reserved":
			fmt.Fprintf(tw, "%d\t%s\treserved\t-\t-\t%s\n", n.Node, n.Addr, ttlString(r.ttl))
		default:
			token := r.token // a lock's; readers and permits have one each
			if token == "" {
				token = "-"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", n.Node, n.Addr, r.state, r.kind, token, ttlString(r.ttl))
		}
	}
	_ = tw.Flush()
}

// printQuarantined prints one line per node the restart quarantine keeps
// out of every majority, with the time left: the table says what the node
// holds, this line why its yes does not count.
func printQuarantined(stdout io.Writer, nodes []redlock.NodeStatus) {
	for _, n := range nodes {
		if n.Err == nil && n.Quarantined > 0 {
			fmt.Fprintf(stdout, "node %d (%s): quarantined after a restart: does not count for %v more\n",
				n.Node, n.Addr, n.Quarantined.Truncate(time.Second))
		}
	}
}

// stateOf names what a node that has the key holds: "held" (a lock, or
// at least one live reader or permit), "expired" (readers or permits whose
// holds have all expired, the key not yet), or "foreign" (a key of another
// Redis type, which no lock of this package makes).
func stateOf(n redlock.NodeStatus) string {
	switch {
	case n.Kind != kindLock && n.Kind != kindReaders && n.Kind != kindPermits:
		return "foreign"
	case n.Leases == 0:
		return "expired"
	default:
		return "held"
	}
}

func ttlString(d time.Duration) string {
	if d < 0 {
		return "no expiry"
	}
	return d.String()
}

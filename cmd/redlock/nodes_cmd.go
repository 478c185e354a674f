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

const nodesUsage = `Usage: redlock nodes check [--nodes URLS] [--timeout D] [--quarantine D]
       redlock nodes declare-fresh [--nodes URLS] [--timeout D]

check shows, for each node, whether it answers, its Redis version,
persistence (always: appendonly yes and appendfsync always; partial;
unknown), uptime, whether the restart quarantine keeps it out now (by the
rule the lock applies: a node younger than the quarantine counts only if it
persists every write or carries the fresh-start declaration for its current
run), its maxmemory-policy (anything but noeviction may evict a lock), and
its clock's offset from the local clock (TIME, to within half a round
trip). Nodes whose servers report the same run_id are one server under
several addresses: none of them counts (the lock counts none of them
either). Of a Redis Cluster node it shows only the answer and the clock: the
lock judges each key's shard master at each vote. It only reads.

declare-fresh declares each node of a NEW deployment fresh: SET
redlock:fresh-start <run_id>, the node's current run, so that the quarantine
counts it at once. It first reads every node, and declares none when any
carries a live lease ceiling (redlock:ceiling: a lease the node granted may
still be valid, there or on a node that restarted since; the refusal says
when it expires) or holds a key of the library's: a lock of any kind (a
token, a multi-lock's, an owner's, the readers' marker, permits),
or any name under the library's reserved prefix "redlock:" (a fence
counter, a queue, an election's key, a marker, an earlier run's
declaration). Locks on any node mean the deployment is not new, and a node
of it that came back empty is a restart, which the quarantine must judge.
It does not declare Redis Cluster nodes.

Flags:
  --nodes URLS      comma-separated node URLs: redis://host:port,
                    rediss://host:port (TLS), or a bare host:port
                    (default: $REDLOCK_NODES)
  --timeout D       how long to wait for each command to a node, at most 5s
                    (default 1s)
  --quarantine D    check: the quarantine the lock's clients use
                    (redlock run --quarantine; default 1m0.602s)

Exit codes:
  0    check: a majority of the nodes counts now; declare-fresh: every
       node declared
  1    declare-fresh: refused, a node holds the library's keys or a live
       lease ceiling
  2    bad flags, or a bad URL
  69   check: no majority counts now (down, refusing the credentials,
       quarantined, one server under several addresses); declare-fresh: a node could not be read or written
`

// nodesOptions are the flags of nodes check and nodes declare-fresh.
type nodesOptions struct {
	nodes      *urlList
	timeout    *durationFlag
	quarantine *durationFlag
}

// nodesFlags registers the nodes commands' flags on fs.
func nodesFlags(fs *flag.FlagSet) nodesOptions {
	return nodesOptions{
		nodes:      nodesFlag(fs, "node URLs"),
		timeout:    durationVar(fs, "timeout", probeTimeout, "how long to wait for each command to a node"),
		quarantine: durationVar(fs, "quarantine", redlock.DefaultQuarantine, "the quarantine the lock's clients use"),
	}
}

// nodesMain is "redlock nodes check" and "redlock nodes declare-fresh".
func nodesMain(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprint(stdout, nodesUsage)
			return exitOK
		}
		return usageError(stderr, "nodes", "say check or declare-fresh")
	}
	sub := args[0]
	if sub != "check" && sub != "declare-fresh" {
		return usageError(stderr, "nodes", "no subcommand %q: say check or declare-fresh", sub)
	}
	fs := newFlagSet("nodes " + sub)
	o := nodesFlags(fs)
	if code, ok := parseFlags(fs, "nodes", nodesUsage, args[1:], stdout, stderr); !ok {
		return code
	}
	switch {
	case fs.NArg() > 0:
		return usageError(stderr, "nodes", "unexpected argument %q", fs.Arg(0))
	case o.timeout.d <= 0:
		return usageError(stderr, "nodes", "--timeout must be positive, got %v", o.timeout.d)
	case o.timeout.d > redlock.NodeTimeoutLimit:
		return usageError(stderr, "nodes", "%s", nodeTimeoutTooLong("--timeout", o.timeout.d))
	case o.quarantine.d < 0:
		return usageError(stderr, "nodes", "--quarantine must not be negative, got %v", o.quarantine.d)
	}
	urls, err := o.nodes.fromEnv()
	if err != nil {
		return usageError(stderr, "nodes", "%v", err)
	}
	pools, err := openNodes(urls)
	if err != nil {
		return usageError(stderr, "nodes", "%v", err)
	}
	defer closeNodes(pools)
	if sub == "declare-fresh" {
		return declareFresh(ctx, stdout, stderr, pools)
	}
	r, err := redlock.CheckNodes(ctx, pools, redlock.WithNodeTimeout(o.timeout.d), redlock.WithQuarantine(o.quarantine.d))
	if err != nil {
		return usageError(stderr, "nodes", "%s", strings.TrimPrefix(err.Error(), "redlock: "))
	}
	return showCheck(stdout, stderr, r)
}

// showCheck prints CheckNodes's report: a table, a line per node that
// does not count or needs attention, the summary, and, when no majority
// counts, what to do; it returns 0 or 69.
func showCheck(stdout, stderr io.Writer, r redlock.NodesReport) int {
	fmt.Fprintf(stdout, "%d nodes (a lock needs %d); restart quarantine %v\n", len(r.Nodes), r.Needed, r.Quarantine)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADDRESS\tANSWERS\tVERSION\tPERSISTENCE\tUPTIME\tQUARANTINE\tMAXMEMORY-POLICY\tCLOCK")
	var notes []string
	var errs []error
	quarantined, same := 0, 0
	for _, n := range r.Nodes {
		notes = append(notes, checkRow(tw, n, r.Nodes)...)
		switch {
		case n.Err != nil:
			errs = append(errs, n.Err)
		case len(n.SameServer) > 0:
			same++
		case n.Quarantined > 0 || (n.Cluster && !n.Counts):
			quarantined++
		}
	}
	_ = tw.Flush()
	for _, s := range notes {
		fmt.Fprintln(stdout, s)
	}
	fmt.Fprintf(stdout, "summary: %d of %d nodes count now, %d needed\n", r.Counting, len(r.Nodes), r.Needed)
	if r.OK() {
		return exitOK
	}
	switch {
	case loginCode(errs...) != "":
		fmt.Fprintf(stderr, "redlock nodes check: no majority counts: %s\n", loginHint(loginCode(errs...)))
	case same > 0:
		fmt.Fprintln(stderr, "redlock nodes check: no majority counts: some addresses lead to one server, "+
			"which counts for none of them: give each node a server of its own")
	case quarantined > 0:
		fmt.Fprintln(stderr, "redlock nodes check: no majority counts: configure appendonly yes + appendfsync always, "+
			"or run `redlock nodes declare-fresh` on a new deployment, or wait out the quarantine")
	default:
		fmt.Fprintln(stderr, "redlock nodes check: no majority counts: bring the nodes back, or check their addresses")
	}
	return exitUnavailable
}

// checkRow writes node n's row of the table to tw, and returns the lines
// to print below it: why it does not count, what needs care. all is every
// node, for the addresses of those that are n's server.
func checkRow(tw io.Writer, n redlock.NodeCheck, all []redlock.NodeCheck) []string {
	var notes []string
	note := func(format string, args ...any) {
		notes = append(notes, fmt.Sprintf("node %d (%s): ", n.Node, n.Addr)+fmt.Sprintf(format, args...))
	}
	if n.Err != nil {
		fmt.Fprintf(tw, "%d\t%s\tno\t-\t-\t-\t-\t-\t-\n", n.Node, n.Addr)
		if loginRefused(n.Err) != "" {
			note("credentials refused: %s", shortErr(n.Err))
		} else {
			note("does not answer: %s", shortErr(n.Err))
		}
		return notes
	}
	if n.Cluster {
		return clusterRows(tw, n)
	}
	quar := "counts"
	switch {
	case len(n.SameServer) > 0:
		quar = "same server"
		note("the same server as %s (run_id %s): a server counts once, so none of them counts; give each node a server of its own",
			sameAs(n.SameServer, all), n.RunID)
	case n.Quarantined > 0:
		quar = "out " + n.Quarantined.Truncate(time.Second).String()
		note("quarantined for %v more: up %v, persistence %s, no fresh-start declaration for run %s",
			n.Quarantined.Truncate(time.Second), n.Uptime, n.Persistence, n.RunID)
	case n.Uptime < 0:
		quar = "unverified"
		note("uptime hidden (INFO refused): the quarantine cannot age it, so it counts")
	}
	if !n.Cluster && n.MaxmemoryPolicy != "" && n.MaxmemoryPolicy != "noeviction" {
		note("warning: maxmemory-policy %s may evict a held lock; set noeviction", n.MaxmemoryPolicy)
	}
	fmt.Fprintf(tw, "%d\t%s\tyes\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Node, n.Addr, dash(n.Version), persistenceOf(n),
		uptimeOf(n), quar, dash(n.MaxmemoryPolicy), signed(n.ClockOffset))
	return notes
}

// clusterRows writes the rows of cluster node n: one for the node, one per
// shard master below it ("0/1" is node 0's second master), and returns the
// notes for them. A key counts on the node when the master of its slot
// counts.
func clusterRows(tw io.Writer, n redlock.NodeCheck) []string {
	var notes []string
	quar := "counts"
	if !n.Counts {
		quar = "some shards out"
	}
	fmt.Fprintf(tw, "%d\t%s\tyes\tcluster\t-\t-\t%s\t-\t%s\n", n.Node, n.Addr, quar, signed(n.ClockOffset))
	if n.MastersErr != nil {
		notes = append(notes, fmt.Sprintf("node %d (%s): a Redis Cluster whose masters were not read (%s); the lock judges the master of each key's slot at each vote (docs/cluster.md)",
			n.Node, n.Addr, shortErr(n.MastersErr)))
		return notes
	}
	for j, m := range n.Masters {
		id := fmt.Sprintf("%d/%d", n.Node, j)
		note := func(format string, args ...any) {
			notes = append(notes, fmt.Sprintf("node %s (%s, a master of node %d): ", id, m.Addr, n.Node)+fmt.Sprintf(format, args...))
		}
		if m.Err != nil {
			fmt.Fprintf(tw, "%s\t%s\tno\t-\t-\t-\t-\t-\t-\n", id, m.Addr)
			note("not read: %s", shortErr(m.Err))
			continue
		}
		mq := "counts"
		switch {
		case m.Quarantined > 0 && m.TookOver:
			mq = "out " + m.Quarantined.Truncate(time.Second).String()
			note("quarantined for %v more: it took over from another master (a failover) and may lack what that one granted; no setting or declaration spares it",
				m.Quarantined.Truncate(time.Second))
		case m.Quarantined > 0:
			mq = "out " + m.Quarantined.Truncate(time.Second).String()
			note("quarantined for %v more: up %v, persistence %s, no fresh-start declaration of its shard for run %s",
				m.Quarantined.Truncate(time.Second), m.Uptime, m.Persistence, m.RunID)
		}
		if m.MaxmemoryPolicy != "" && m.MaxmemoryPolicy != "noeviction" {
			note("warning: maxmemory-policy %s may evict a held lock; set noeviction", m.MaxmemoryPolicy)
		}
		fmt.Fprintf(tw, "%s\t%s\tyes\t%s\t%s\t%s\t%s\t%s\t%s\n", id, m.Addr, dash(m.Version), persistenceOf(m),
			uptimeOf(m), mq, dash(m.MaxmemoryPolicy), signed(m.ClockOffset))
	}
	return notes
}

// declareFresh runs redlock.DeclareFresh and says what it declared, or why
// not.
func declareFresh(ctx context.Context, stdout, stderr io.Writer, pools []pool.Pool) int {
	decl, err := redlock.DeclareFresh(ctx, pools)
	for _, d := range decl {
		fmt.Fprintf(stdout, "node %d (%s): SET %s %s\n", d.Node, d.Addr, d.Key, d.RunID)
	}
	if err == nil {
		return exitOK
	}
	var causes []error
	if j, ok := errors.Unwrap(err).(interface{ Unwrap() []error }); ok {
		causes = j.Unwrap()
	}
	if len(decl) == 0 {
		fmt.Fprintln(stderr, "redlock nodes declare-fresh: no node declared:")
	} else {
		fmt.Fprintln(stderr, "redlock nodes declare-fresh: declaring failed on:")
	}
	for _, c := range causes {
		fmt.Fprintf(stderr, "  %s\n", strings.TrimPrefix(c.Error(), "redlock: "))
	}
	if errors.Is(err, redlock.ErrNotFresh) {
		fmt.Fprintln(stderr, "redlock nodes declare-fresh: this deployment holds locks, or a lease that may still be valid, so it is not new: "+
			"a node that came back empty restarted, and the quarantine must judge it (docs/safety.md); "+
			"where only lease ceilings (redlock:ceiling) refused it, retry once every ceiling named has expired")
		return exitFailure
	}
	unavailableHint(stderr, "redlock nodes declare-fresh", causes...)
	return exitUnavailable
}

func persistenceOf(n redlock.NodeCheck) string {
	s := n.Persistence.String()
	if n.FreshStart {
		s += ", declared fresh"
	}
	return s
}

func uptimeOf(n redlock.NodeCheck) string {
	if n.Uptime < 0 {
		return "-"
	}
	return n.Uptime.String()
}

// sameAs names the nodes of all listed in same: "node 0 (127.0.0.1:6379)".
func sameAs(same []int, all []redlock.NodeCheck) string {
	names := make([]string, len(same))
	for k, j := range same {
		names[k] = fmt.Sprintf("node %d (%s)", j, all[j].Addr)
	}
	return strings.Join(names, ", ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// signed is d with its sign: "+3ms", "-1.2s", "+0s".
func signed(d time.Duration) string {
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}

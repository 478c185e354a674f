package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

const runUsage = `Usage: redlock run [--nodes URLS] --key KEY [--ttl D] [--wait D] [--grace D] -- COMMAND [ARG...]

Takes the lock KEY on a majority of the nodes, runs COMMAND while keeping the
lock alive, releases the lock when COMMAND exits, and exits with COMMAND's
exit code. COMMAND shares redlock's stdin, stdout and stderr, and runs in a
process group of its own: SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to redlock
are passed on to that group.

If the lock is lost while COMMAND runs (a majority of the nodes no longer
hold it, or cannot be reached before it expires), COMMAND's process group
gets SIGTERM, then SIGKILL after --grace, and redlock exits 70.

Flags:
  --nodes URLS        comma-separated redis:// or rediss:// URLs of the nodes
                      (default: $REDLOCK_NODES)
  --key KEY           the lock's key
  --ttl D             the lock's time to live (default 10s). It is extended
                      every D/3 while COMMAND runs; if redlock dies, the lock
                      frees itself at most D after the last extension.
  --wait D            how long to wait for the lock (default 0: try once)
  --grace D           time from SIGTERM to SIGKILL when the lock is lost
                      (default 5s)
  --node-timeout D    bound on each call to one node (default: TTL/20)

Exit codes:
  N      COMMAND's exit code; 128+n when COMMAND was killed by signal n
  2      bad flags, no COMMAND, a bad URL or duration
  69     a majority of the nodes cannot be reached
  70     the lock was lost while COMMAND ran; COMMAND was stopped
  75     the lock is held by another owner, or was not obtained in --wait
  126    COMMAND could not be started
  127    COMMAND was not found
  128+n  redlock got signal n while waiting for the lock
`

const (
	defaultTTL   = 10 * time.Second
	defaultGrace = 5 * time.Second
	minTTL       = 10 * time.Millisecond
)

// runner is one "redlock run": its settings, streams and signals.
type runner struct {
	key              string
	ttl, wait, grace time.Duration
	nodeTimeout      time.Duration
	argv             []string
	pools            []pool.Pool

	stdin          io.Reader
	stdout, stderr io.Writer
	sigs           chan os.Signal // the forwarded signals, from Notify
}

// runMain is "redlock run".
func runMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", runUsage, stderr)
	nodes := nodesFlag(fs, "node URLs")
	r := &runner{stdin: stdin, stdout: stdout, stderr: stderr}
	fs.StringVar(&r.key, "key", "", "the lock's key")
	fs.DurationVar(&r.ttl, "ttl", defaultTTL, "the lock's time to live")
	fs.DurationVar(&r.wait, "wait", 0, "how long to wait for the lock")
	fs.DurationVar(&r.grace, "grace", defaultGrace, "time from SIGTERM to SIGKILL")
	nodeTimeout := fs.Duration("node-timeout", 0, "bound on each call to one node")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	r.argv = fs.Args()
	switch {
	case r.key == "":
		return usageError(stderr, "run", "--key is required")
	case r.ttl < minTTL:
		// Below this the drift allowance and the node calls leave
		// little or no validity; the library would refuse a few ms.
		return usageError(stderr, "run", "--ttl must be at least %v, got %v", minTTL, r.ttl)
	case r.wait < 0:
		return usageError(stderr, "run", "--wait must not be negative, got %v", r.wait)
	case r.grace < 0:
		return usageError(stderr, "run", "--grace must not be negative, got %v", r.grace)
	case *nodeTimeout < 0:
		return usageError(stderr, "run", "--node-timeout must not be negative, got %v", *nodeTimeout)
	case len(r.argv) == 0:
		return usageError(stderr, "run", "no command to run (give it after --)")
	}
	urls, err := nodes.fromEnv()
	if err != nil {
		return usageError(stderr, "run", "%v", err)
	}
	if r.pools, err = openNodes(urls); err != nil {
		return usageError(stderr, "run", "%v", err)
	}
	defer closeNodes(r.pools)
	if *nodeTimeout == 0 {
		*nodeTimeout = max(r.ttl/20, time.Millisecond)
	}
	r.nodeTimeout = *nodeTimeout
	c, err := redlock.New(r.pools, redlock.WithNodeTimeout(r.nodeTimeout))
	if err != nil {
		return usageError(stderr, "run", "%v", err)
	}
	defer c.Close()

	// Listen before acquiring: a signal while waiting ends the wait, and one
	// that arrives as the command starts is passed on, not lost.
	r.sigs = make(chan os.Signal, 8)
	signal.Notify(r.sigs, forwarded...)
	defer signal.Stop(r.sigs)

	// Connect first: a fresh process has no connections, and dialing inside
	// the first attempt would count against the node timeout. This also
	// finds a majority down before trying.
	if t := tallyStates(probe(ctx, r.pools, r.key, max(r.nodeTimeout, probeTimeout))); t.majorityUnreachable() {
		msg, code := notObtained(nil, t)
		fmt.Fprintf(stderr, "redlock: lock %q not obtained: %s\n", r.key, msg)
		return code
	}
	l, code := r.acquire(ctx, c)
	if l == nil {
		return code
	}
	return r.supervise(ctx, l)
}

// acquire takes the lock, once (--wait 0) or until --wait ends. Without the
// lock it returns nil and the exit code, having said why on stderr.
func (r *runner) acquire(ctx context.Context, c *redlock.Client) (*redlock.Lock, int) {
	var actx context.Context
	var cancel context.CancelFunc
	if r.wait > 0 {
		actx, cancel = context.WithTimeout(ctx, r.wait)
	} else {
		actx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	var got os.Signal
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case got = <-r.sigs:
			cancel()
		case <-stop:
		}
	}()
	var l *redlock.Lock
	var err error
	if r.wait > 0 {
		l, err = c.Lock(actx, r.key, r.ttl, redlock.WithAutoExtend(0))
	} else {
		l, err = c.TryLock(actx, r.key, r.ttl, redlock.WithAutoExtend(0))
	}
	close(stop)
	<-stopped

	if got != nil {
		if l != nil {
			_ = l.Unlock(context.WithoutCancel(ctx))
		}
		fmt.Fprintf(r.stderr, "redlock: stopped waiting for lock %q: %v\n", r.key, got)
		return nil, exitSignalBase + signalNumber(got)
	}
	if err == nil {
		return l, exitOK
	}
	if !errors.Is(err, redlock.ErrNotObtained) {
		// Not about the nodes: an argument the library refused (a TTL too
		// short to leave any validity).
		return nil, usageError(r.stderr, "run", "%s", strings.TrimPrefix(err.Error(), "redlock: "))
	}
	// The error says what each node answered before the attempt was
	// decided (the slowest not at all); a read of every node says who holds
	// the key, or which nodes are down.
	t := tallyStates(probe(context.WithoutCancel(ctx), r.pools, r.key, probeTimeout))
	msg, code := notObtained(err, t)
	within := ""
	if r.wait > 0 {
		within = " within " + r.wait.String()
	}
	fmt.Fprintf(r.stderr, "redlock: lock %q not obtained%s: %s\n", r.key, within, msg)
	return nil, code
}

// notObtained explains a failed acquisition from the nodes' state read
// after it, and picks the exit code: 69 when a majority of the nodes is
// unreachable, 75 otherwise.
func notObtained(err error, t tally) (string, int) {
	var reasons []string
	if n := t.holding; n > 0 {
		owner := "another owner"
		if t.tokens > 1 {
			owner = fmt.Sprintf("%d other owners", t.tokens)
		}
		reasons = append(reasons, fmt.Sprintf("held by %s on %d of %d nodes", owner, n, t.total))
	}
	if len(t.failed) > 0 {
		what := "unreachable"
		if len(t.failed) > t.unreachable {
			what = "unreachable or failing" // some answered with an error
		}
		reasons = append(reasons, fmt.Sprintf("%d of %d nodes %s (%s)", len(t.failed), t.total, what, t.failures()))
	}
	if len(reasons) == 0 {
		// The key is free now: the holder let go just after our attempt,
		// or the attempt itself was too slow.
		reasons = append(reasons, explain(err)+"; the key is free now")
	}
	code := exitTempFail
	if t.majorityUnreachable() {
		code = exitUnavailable
	}
	return strings.Join(reasons, ", "), code
}

func signalNumber(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return int(n)
	}
	return 0
}

package main

import (
	"context"
	"errors"
	"flag"
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

const runUsage = `Usage: redlock run [--nodes URLS] --key KEY [--ttl D] [--wait D] [--grace D]
                   [--node-timeout D] [--max-ttl D] [--quarantine D]
                   [--lock-delay D] [--max-hold D] [--conflict-exit-code N] -- COMMAND [ARG...]

Takes the lock KEY on a majority of the nodes, runs COMMAND while keeping the
lock alive, releases the lock when COMMAND exits, and exits with COMMAND's
exit code. COMMAND shares redlock's stdin, stdout and stderr, and runs in a
process group of its own: SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to redlock
are passed on to that group.

If the lock is lost while COMMAND runs (a majority of the nodes no longer
hold it, or cannot be reached before it expires), COMMAND's process group
gets SIGTERM, then SIGKILL after --grace, and redlock exits 70. When nodes do
not answer, loss is declared a margin before the lock expires: the larger of
TTL/10 and twice the node timeout (TTL/10 with the default node timeout).

If redlock itself dies (kill -9, a crash), a helper process that leads
COMMAND's group sends the group SIGTERM, then SIGKILL after --grace, so that
COMMAND does not run on without the lock (on Unix; not on Windows).

Flags:
  --nodes URLS        comma-separated node URLs: redis://host:port,
                      rediss://host:port (TLS), or a bare host:port
                      (default: $REDLOCK_NODES)
  --key KEY           the lock's key
  --ttl D             the lock's time to live (default 10s). It is extended
                      every D/3 while COMMAND runs; if redlock dies, the lock
                      frees itself at most D after the last extension.
  --wait D            how long to wait for the lock (default 0: try once)
  --grace D           time from SIGTERM to SIGKILL when the lock is lost or
                      redlock dies (default: half the loss margin, which is
                      TTL/20 with the default node timeout: 500ms for a 10s
                      TTL). A grace longer than the margin lets COMMAND
                      outlive the lock.
  --node-timeout D    bound on each call to one node, at most 5s
                      (default: min(TTL/20, 500ms))
  --max-ttl D         the longest TTL any client of these nodes uses, at
                      least --ttl; every client must give the same (the
                      nodes record the largest, which lengthens a shorter
                      client's quarantine) (default 1m0s)
  --quarantine D      how long a node that restarted without persisting
                      every write stays out of the majority; 0 turns the
                      check off (default: --max-ttl plus 1%, 1m0.602s with
                      the default --max-ttl)
  --lock-delay D      after a lock on KEY expired without a release (its
                      holder died), wait D more before taking it; every
                      client of KEY must use the same D (default 0: off)
  --max-hold D        hold the lock at most D from when it was taken: it is
                      not extended past that, COMMAND is stopped as on a
                      loss (exit 70) just before, and the lock expires at D.
                      At least --ttl (default 0: no limit)
  --conflict-exit-code N
                      the exit code when the lock is held by another owner,
                      or was not obtained in --wait because it was, like
                      flock's -E; 0 to 255 (default 75). Only for
                      contention: a lock-delay or a key of another kind
                      still exits 75, and nodes that make no majority
                      (down, quarantined, refusing the credentials) 69

Exit codes:
  N      COMMAND's exit code; 128+n when COMMAND was killed by signal n
  2      bad flags, no COMMAND, a bad URL or duration
  69     no majority of the nodes counts: down, refusing the URLs'
         credentials, or in the restart quarantine; see
         "redlock nodes check"
  70     the lock was lost while COMMAND ran, or --max-hold was reached;
         COMMAND was stopped
  75     the lock is held by another owner, or was not obtained in --wait
         because it was (N with --conflict-exit-code N); or the key is in
         its lock-delay, or another kind of lock
  126    COMMAND, or the helper that stops it if redlock dies, could not
         be started
  127    COMMAND was not found
  128+n  redlock got signal n while waiting for the lock
`

const (
	defaultTTL = 10 * time.Second
	minTTL     = 10 * time.Millisecond
)

// defaultNodeTimeout is the library's default bound on each call to one
// node for a lock of ttl (see redlock.WithNodeTimeout): ttl/20, at least
// 1ms, at most redlock.MaxNodeTimeout. run passes it explicitly, so that the
// loss margin it derives the default grace from is the one the lock uses.
func defaultNodeTimeout(ttl time.Duration) time.Duration {
	return min(max(ttl/20, time.Millisecond), redlock.MaxNodeTimeout)
}

// lossMargin is how long before its validity ends the library gives up an
// auto-extended lock whose extensions do not get through (redlock
// WithAutoExtend): the larger of ttl/10 and twice the node timeout. COMMAND
// gets SIGTERM then; a SIGKILL within the margin stops it while the lock
// still excludes everyone else.
func lossMargin(ttl, nodeTimeout time.Duration) time.Duration {
	return max(ttl/10, 2*nodeTimeout)
}

// runner is one "redlock run": its settings, streams and signals.
type runner struct {
	key              string
	ttl, wait, grace time.Duration
	nodeTimeout      time.Duration
	quarantine       *time.Duration // nil: the library's default
	maxTTL           time.Duration  // the longest TTL of the nodes' clients
	lockDelay        time.Duration  // 0: off
	maxHold          time.Duration  // 0: no limit
	conflictCode     int            // the exit code when another owner holds the lock
	argv             []string
	pools            []pool.Pool

	stdin          io.Reader
	stdout, stderr io.Writer
	sigs           chan os.Signal // the forwarded signals, from Notify
	extended       chan struct{}  // a lock extension happened; buffered, 1
}

// runMain is "redlock run".
func runMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	r := &runner{stdin: stdin, stdout: stdout, stderr: stderr}
	urls, code, ok := r.parse(args)
	if !ok {
		return code
	}
	var err error
	if r.pools, err = openNodes(urls); err != nil {
		return usageError(stderr, "run", "%v", err)
	}
	defer closeNodes(r.pools)
	r.extended = make(chan struct{}, 1)
	opts := []redlock.Option{redlock.WithNodeTimeout(r.nodeTimeout), redlock.WithObserver(r), redlock.WithMaxTTL(r.maxTTL)}
	if r.quarantine != nil {
		opts = append(opts, redlock.WithQuarantine(*r.quarantine))
	}
	if r.lockDelay != 0 {
		opts = append(opts, redlock.WithLockDelay(r.lockDelay))
	}
	c, err := redlock.New(r.pools, opts...)
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
		return r.refused(nil, t, "")
	}
	l, code := r.acquire(ctx, c)
	if l == nil {
		return code
	}
	return r.supervise(ctx, l)
}

// runFlags are run's flags that parse reads after parsing.
type runFlags struct {
	nodes                          *urlList
	ttl, wait, grace, nodeTimeout  *durationFlag
	quarantine, lockDelay, maxHold *durationFlag
	maxTTL                         *durationFlag
	conflictCode                   *int
}

// define registers run's flags on fs; --key goes straight into r.
func (r *runner) define(fs *flag.FlagSet) runFlags {
	f := runFlags{nodes: nodesFlag(fs, "node URLs")}
	fs.StringVar(&r.key, "key", "", "the lock's key")
	f.ttl = durationVar(fs, "ttl", defaultTTL, "the lock's time to live")
	f.wait = durationVar(fs, "wait", 0, "how long to wait for the lock")
	f.grace = durationVar(fs, "grace", 0, "time from SIGTERM to SIGKILL")
	f.nodeTimeout = durationVar(fs, "node-timeout", 0, "bound on each call to one node")
	f.maxTTL = durationVar(fs, "max-ttl", redlock.DefaultMaxTTL, "the longest TTL any client of these nodes uses")
	f.quarantine = durationVar(fs, "quarantine", redlock.DefaultQuarantine, "how long a restarted node without persistence does not count")
	f.lockDelay = durationVar(fs, "lock-delay", 0, "how long a key whose holder died stays free of new holders")
	f.maxHold = durationVar(fs, "max-hold", 0, "how long the lock is held at most")
	f.conflictCode = fs.Int("conflict-exit-code", exitTempFail, "the exit code when another owner holds the lock")
	return f
}

// Observe notes each extension of the lock, for the holder record to follow
// (see holderRecord.keep). It never blocks the lock's keeper: one pending
// note is enough.
func (r *runner) Observe(_ context.Context, e redlock.Event) {
	if e.Kind != redlock.Extended {
		return
	}
	select {
	case r.extended <- struct{}{}:
	default:
	}
}

// parse reads run's flags into r and returns the node URLs. It returns ok
// false with the exit code after help or a usage error.
func (r *runner) parse(args []string) (urls []string, code int, ok bool) {
	fs := newFlagSet("run")
	f := r.define(fs)
	if code, ok := parseFlags(fs, "run", runUsage, args, r.stdout, r.stderr); !ok {
		return nil, code, false
	}
	r.argv, r.ttl, r.wait, r.grace, r.nodeTimeout = fs.Args(), f.ttl.d, f.wait.d, f.grace.d, f.nodeTimeout.d
	switch {
	case r.key == "":
		return nil, usageError(r.stderr, "run", "--key is required"), false
	case r.ttl < minTTL:
		// Below this the drift allowance and the node calls leave
		// little or no validity; the library would refuse a few ms.
		return nil, usageError(r.stderr, "run", "--ttl must be at least %v, got %v", minTTL, r.ttl), false
	case r.ttl > f.maxTTL.d && f.maxTTL.d >= minTTL:
		return nil, usageError(r.stderr, "run", "--ttl %v is longer than --max-ttl %v: give --max-ttl %v or more, the same to every client of these nodes (the restart quarantine follows it)",
			r.ttl, f.maxTTL.d, r.ttl), false
	case f.maxTTL.d < minTTL || f.maxTTL.d > redlock.MaxTTL:
		return nil, usageError(r.stderr, "run", "--max-ttl must be between %v and %v, got %v", minTTL, redlock.MaxTTL, f.maxTTL.d), false
	case r.wait < 0:
		return nil, usageError(r.stderr, "run", "--wait must not be negative, got %v", r.wait), false
	case r.grace < 0:
		return nil, usageError(r.stderr, "run", "--grace must not be negative, got %v", r.grace), false
	case f.nodeTimeout.set && r.nodeTimeout <= 0:
		return nil, usageError(r.stderr, "run", "--node-timeout must be positive, got %v", r.nodeTimeout), false
	case r.nodeTimeout > redlock.NodeTimeoutLimit:
		return nil, usageError(r.stderr, "run", "%s", nodeTimeoutTooLong("--node-timeout", r.nodeTimeout)), false
	case f.quarantine.d < 0:
		return nil, usageError(r.stderr, "run", "--quarantine must not be negative, got %v", f.quarantine.d), false
	case f.maxHold.d < 0:
		return nil, usageError(r.stderr, "run", "--max-hold must not be negative, got %v", f.maxHold.d), false
	case f.maxHold.d != 0 && f.maxHold.d < r.ttl:
		return nil, usageError(r.stderr, "run", "--max-hold must be at least --ttl (%v), got %v", r.ttl, f.maxHold.d), false
	case *f.conflictCode < 0 || *f.conflictCode > 255:
		return nil, usageError(r.stderr, "run", "--conflict-exit-code must be between 0 and 255, got %d", *f.conflictCode), false
	case len(r.argv) == 0:
		return nil, usageError(r.stderr, "run", "no command to run (give it after --)"), false
	}
	if f.quarantine.set {
		r.quarantine = &f.quarantine.d
	}
	r.lockDelay, r.maxHold, r.conflictCode, r.maxTTL = f.lockDelay.d, f.maxHold.d, *f.conflictCode, f.maxTTL.d
	if !f.nodeTimeout.set {
		r.nodeTimeout = defaultNodeTimeout(r.ttl)
	}
	if !f.grace.set {
		r.grace = lossMargin(r.ttl, r.nodeTimeout) / 2
	}
	urls, err := f.nodes.fromEnv()
	if err != nil {
		return nil, usageError(r.stderr, "run", "%v", err), false
	}
	return urls, 0, true
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
	opts := []redlock.LockOption{redlock.WithAutoExtend(0), redlock.WithMaxHold(r.maxHold)}
	if r.wait > 0 {
		l, err = c.Lock(actx, r.key, r.ttl, opts...)
	} else {
		l, err = c.TryLock(actx, r.key, r.ttl, opts...)
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
	// decided (the slowest not at all), and whether the key is held
	// (redlock.IsContended); when it is, a read of every node says by how
	// many owners, on how many nodes.
	var t tally
	if redlock.IsContended(err) {
		t = tallyStates(probe(context.WithoutCancel(ctx), r.pools, r.key, probeTimeout))
	}
	within := ""
	if r.wait > 0 {
		within = " within " + r.wait.String()
	}
	return nil, r.refused(err, t, within)
}

// refused says on stderr why the lock was not obtained (err, the
// attempt's error, nil when the read before it found a majority down; t,
// the nodes' state) and returns the exit code; an exit 69 gets the hint
// naming redlock nodes check, or the credentials the nodes refused.
func (r *runner) refused(err error, t tally, within string) int {
	msg, code := notObtained(err, t, r.conflictCode)
	fmt.Fprintf(r.stderr, "redlock: lock %q not obtained%s: %s\n", r.key, within, msg)
	if code == exitUnavailable {
		errs := nodeErrors(err)
		for _, s := range t.failed {
			errs = append(errs, s.Err)
		}
		unavailableHint(r.stderr, "redlock run", errs...)
	}
	return code
}

func signalNumber(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return int(n)
	}
	return 0
}

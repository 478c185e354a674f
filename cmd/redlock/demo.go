package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

const demoUsage = `Usage: redlock demo [--nodes URLS] [--workers N] [--tickets N]

The classic ticket sale, run twice. Workers sell the tickets by
read-modify-write on a counter in Redis: GET the tickets left, pause as if
taking a payment, SET one fewer, record the seat sold. Without a lock,
workers read the same count and sell the same seat: more sales than tickets,
and decrements lost. With Redlock around each sale the count is exact, even
though one of the five lock nodes is killed halfway.

With no flags it needs nothing installed: the five lock nodes and a sixth
"shop" node, which holds the counter and the sales, are in-memory Redis
servers (miniredis) inside this process. The shop is kept apart from the lock
nodes so that killing a lock node does not take the counter with it, as in
real life, where the lock guards some other resource.

--nodes takes the locks on real Redis instead (the shop stays in-process).
No node is killed then: stop one yourself while the sale runs.

Flags:
  --nodes URLS    comma-separated URLs of lock nodes (redis://host:port,
                  rediss://..., or a bare host:port)
                  (default: five in-process nodes; REDLOCK_NODES is ignored)
  --workers N     concurrent sellers (default 8)
  --tickets N     tickets for sale (default 100)

Exit codes:
  0    the sale with Redlock was exact
  1    it was not, or the demo failed
  2    bad flags
  69   a majority of the --nodes cannot be reached
`

const (
	demoNodes   = 5
	demoLockKey = "redlock-demo:box-office"
	demoLockTTL = 2 * time.Second
	// demoNodeTimeout is above the library's default (min(TTL/20, 500ms), here
	// 100ms): the in-process nodes share the CPUs with everything else on
	// the machine, and under load slow answers would turn into failed
	// releases and TTL-long stalls. It still leaves most of the TTL as
	// validity, which is what the bound protects.
	demoNodeTimeout = 250 * time.Millisecond
	// demoTimeout ends a demo that should have finished in seconds.
	demoTimeout = time.Minute
)

// demoRetry is how a waiting worker retries: soon at first, then backing
// off to a few sale times, so that seven waiters do not swamp the nodes (and
// slow the holder) on a busy machine.
var demoRetry = redlock.ExponentialBackoff(25*time.Millisecond, 250*time.Millisecond)

// demoFlags registers demo's flags on fs.
func demoFlags(fs *flag.FlagSet) (nodes *urlList, workers, tickets *int) {
	nodes = nodesFlag(fs, "lock node URLs")
	workers = fs.Int("workers", 8, "concurrent sellers")
	tickets = fs.Int("tickets", 100, "tickets for sale")
	return nodes, workers, tickets
}

// demoMain is "redlock demo".
func demoMain(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("demo")
	nodes, workers, tickets := demoFlags(fs)
	if code, ok := parseFlags(fs, "demo", demoUsage, args, stdout, stderr); !ok {
		return code
	}
	switch {
	case fs.NArg() > 0:
		return usageError(stderr, "demo", "unexpected argument %q", fs.Arg(0))
	case *workers < 1 || *workers > 1000:
		return usageError(stderr, "demo", "--workers must be between 1 and 1000, got %d", *workers)
	case *tickets < 1 || *tickets > 100000:
		return usageError(stderr, "demo", "--tickets must be between 1 and 100000, got %d", *tickets)
	}

	// The lock nodes: in-process, or the user's.
	inProcess := len(*nodes) == 0
	urls, servers, err := demoLockNodes(*nodes)
	defer closeMiniredis(servers)
	if err != nil {
		fmt.Fprintf(stderr, "redlock demo: %v\n", err)
		return exitFailure
	}
	pools, err := openNodes(urls)
	if err != nil {
		return usageError(stderr, "demo", "%v", err)
	}
	defer closeNodes(pools)
	c, err := redlock.New(pools, redlock.WithNodeTimeout(demoNodeTimeout))
	if err != nil {
		return usageError(stderr, "demo", "%v", err)
	}
	defer c.Close()
	if !inProcess {
		if t := tallyStates(probe(ctx, pools, demoLockKey, probeTimeout)); t.majorityUnreachable() {
			fmt.Fprintf(stderr, "redlock demo: %d of %d nodes unreachable: %s\n", t.unreachable, t.total, t.failures())
			return exitUnavailable
		}
	}

	shopServer, err := startMiniredis()
	if err != nil {
		fmt.Fprintf(stderr, "redlock demo: %v\n", err)
		return exitFailure
	}
	defer shopServer.Close()
	shop := redis.NewClient(&redis.Options{Addr: shopServer.Addr()})
	defer shop.Close()

	ctx, cancel := context.WithTimeoutCause(ctx, demoTimeout, errSaleTimeout)
	defer cancel()
	d := &demoRun{c: c, pools: pools, servers: servers, shop: shop,
		workers: *workers, tickets: *tickets, out: &printer{w: stdout}, stdout: stdout}
	return d.run(ctx)
}

// demoRun is the demo once its nodes are up.
type demoRun struct {
	c                *redlock.Client
	pools            []pool.Pool
	servers          []*miniredis.Miniredis // the in-process lock nodes; none with --nodes
	shop             *redis.Client
	workers, tickets int
	out              *printer
	stdout           io.Writer
}

// run runs the sale without a lock, then with Redlock (killing an
// in-process lock node halfway), prints the comparison and returns the exit
// code.
func (d *demoRun) run(ctx context.Context) int {
	inProcess := len(d.servers) > 0
	c, pools, servers, shop, out := d.c, d.pools, d.servers, d.shop, d.out
	where := fmt.Sprintf("%d in-process Redis nodes (miniredis)", demoNodes)
	if !inProcess {
		where = fmt.Sprintf("%d Redis nodes from --nodes", len(pools))
	}
	out.printf("Ticket sale: %d workers sell %d tickets; each sale is GET tickets left, pause %v, SET one fewer, record the seat.\n",
		d.workers, d.tickets, salePause)
	out.printf("Lock nodes: %s, a lock needs %d. Counter and sales: a separate in-process \"shop\" node.\n\n", where, c.Quorum())

	unlocked := &sale{shop: shop, workers: d.workers, tickets: d.tickets, out: out,
		guard: func(ctx context.Context, sell func(context.Context) error) error { return sell(ctx) }}
	out.printf("1) Without a lock\n")
	unlocked.run(ctx)
	report(out, unlocked)

	locked := &sale{shop: shop, workers: d.workers, tickets: d.tickets, out: out, guard: lockedGuard(c, out)}
	out.printf("\n2) With Redlock around each sale (key %q, TTL %v)\n", demoLockKey, demoLockTTL)
	if inProcess {
		victim := len(servers) - 1
		locked.halfway = func() {
			servers[victim].Close()
			out.printf("   !! lock node %d (%s) killed: %d of %d nodes left, a lock needs %d; the sale goes on\n",
				victim, pools[victim].Addr(), len(servers)-1, len(servers), c.Quorum())
		}
	} else {
		out.printf("   (no node is killed with --nodes: stop one yourself to watch the sale go on at quorum)\n")
	}
	locked.run(ctx)
	report(out, locked)

	out.printf("\n")
	table(d.stdout, unlocked, locked)
	out.printf("\n")
	return conclude(out, unlocked, locked, inProcess)
}

// conclude prints what the two sales show and returns the exit code: a
// failure if the locked sale failed or was not exact.
func conclude(out *printer, unlocked, locked *sale, inProcess bool) int {
	switch {
	case unlocked.err != nil:
		out.printf("Without a lock: the run failed (%v).\n", unlocked.err)
	case !unlocked.exact():
		out.printf("Without a lock: %d sales recorded for %d tickets, %d oversold, one seat sold %d times;\n"+
			"  the counter shows %d tickets gone: the other decrements were lost, overwritten by workers that read the same count.\n",
			unlocked.sales, unlocked.tickets, unlocked.oversold(), unlocked.most, unlocked.counted())
	default:
		out.printf("Without a lock: no oversell this time; the race is a matter of luck. Run it again.\n")
	}
	switch {
	case locked.err != nil:
		out.printf("With Redlock: the run failed (%v).\n", locked.err)
		return exitFailure
	case !locked.exact():
		out.printf("With Redlock: NOT EXACT. This is a bug; please report it.\n")
		return exitFailure
	}
	killed := ""
	if inProcess {
		killed = fmt.Sprintf(", with one of the %d lock nodes killed halfway", demoNodes)
	}
	out.printf("With Redlock: exact: %d sold, 0 oversold, 0 lost%s.\n", locked.sales, killed)
	return exitOK
}

// demoLockNodes returns the URLs of the lock nodes: urls, or when there are
// none, those of demoNodes in-process nodes it starts, returned for the
// caller to close (with closeMiniredis) even when it fails.
func demoLockNodes(urls []string) ([]string, []*miniredis.Miniredis, error) {
	if len(urls) > 0 {
		return urls, nil, nil
	}
	var servers []*miniredis.Miniredis
	for range demoNodes {
		s, err := startMiniredis()
		if err != nil {
			return nil, servers, err
		}
		servers = append(servers, s)
		urls = append(urls, "redis://"+s.Addr())
	}
	return urls, servers, nil
}

// closeMiniredis closes the in-process nodes.
func closeMiniredis(servers []*miniredis.Miniredis) {
	for _, s := range servers {
		s.Close()
	}
}

// lockedGuard runs each sale under the demo's lock, through c.Do. A sale
// done under the lock whose release fell short of a majority counts as
// done: it says so on out and goes on.
func lockedGuard(c *redlock.Client, out *printer) guard {
	return func(ctx context.Context, sell func(context.Context) error) error {
		var sellErr error
		err := c.Do(ctx, demoLockKey, demoLockTTL, func(ctx context.Context) error {
			sellErr = sell(ctx)
			return sellErr
		}, redlock.WithRetry(demoRetry))
		if sellErr == nil && errors.Is(err, redlock.ErrNotReleased) && !errors.Is(err, redlock.ErrLockLost) {
			// The sale was done under the lock; only the release fell
			// short of a majority, as when the killed node was one of
			// just three holding it. Any copy left expires by the
			// TTL: at worst a stall, never a second holder.
			out.printf("   !! a release was confirmed by too few nodes: %s;\n"+
				"      any copy left expires within the TTL (%v), and the sale goes on\n", explain(err), demoLockTTL)
			return nil
		}
		return err
	}
}

// startMiniredis starts an in-process node whose keys expire in real time,
// as on Redis (miniredis expires keys only when told to, by default).
func startMiniredis() (*miniredis.Miniredis, error) {
	s, err := miniredis.Run()
	if err != nil {
		return nil, fmt.Errorf("start an in-process Redis node: %w", err)
	}
	s.ClockTTL(true)
	return s, nil
}

// report prints the end of one run.
func report(out *printer, s *sale) {
	if s.err != nil {
		out.printf("   failed after %v: %v\n", s.elapsed.Round(time.Millisecond), s.err)
		return
	}
	out.printf("   sold out in %v\n", s.elapsed.Round(time.Millisecond))
}

// table prints the two runs side by side.
func table(w io.Writer, unlocked, locked *sale) {
	row := func(name string, f func(*sale) string) {
		fmt.Fprintf(w, "%-30s %14s %14s\n", name, f(unlocked), f(locked))
	}
	num := func(f func(*sale) int) func(*sale) string {
		return func(s *sale) string {
			if s.err != nil {
				return "-"
			}
			return fmt.Sprint(f(s))
		}
	}
	row("", func(s *sale) string {
		if s == unlocked {
			return "without a lock"
		}
		return "with Redlock"
	})
	row("tickets for sale", num(func(s *sale) int { return s.tickets }))
	row("sales recorded", num(func(s *sale) int { return s.sales }))
	row("tickets gone by the counter", num((*sale).counted))
	row("oversold", num((*sale).oversold))
	row("most sales of one seat", num(func(s *sale) int { return s.most }))
	row("time", func(s *sale) string { return s.elapsed.Round(time.Millisecond).String() })
}

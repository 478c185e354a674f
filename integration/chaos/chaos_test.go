package chaos_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redlockgo/redlock/integration/chaos"
	"github.com/redlockgo/redlock/integration/cluster"
)

// Environment of TestChaos. Booleans take strconv.ParseBool's forms.
const (
	// EnvDuration is the run's length (a Go duration). Unset: a short safe
	// run (smokeDuration), so that `go test ./...` stays quick and never
	// skips the chaos test.
	EnvDuration = "CHAOS_DURATION"
	// EnvUnsafe plays the negative control.
	EnvUnsafe = "CHAOS_UNSAFE"
	// EnvFencing takes every lock with fencing and writes through the
	// fenced store.
	EnvFencing = "CHAOS_FENCING"
	// EnvSeed fixes the random choices (a uint64; unset: from the clock).
	EnvSeed = "CHAOS_SEED"
	// EnvClusterShards, a positive number, runs on three Redis Clusters of
	// that many masters each, with faults on single shards (a safe run
	// without fencing only): `make -C integration chaos CHAOS_CLUSTER_SHARDS=3`.
	EnvClusterShards = "CHAOS_CLUSTER_SHARDS"
	// EnvLiveClockJumps adds forward clock jumps on running nodes to the
	// safe schedule (Config.LiveClockJumps): a measurement, which may find
	// violations.
	EnvLiveClockJumps = "CHAOS_LIVE_CLOCK_JUMPS"
	// EnvNodeTimeout sets the clients' node timeout (a Go duration; unset:
	// the smoke run's smokeNodeTimeout, or with EnvDuration the library's
	// default). CI's one-minute run sets 1s: at the default 150ms, one run
	// in five on a 2-core machine fell into the dial storm smokeNodeTimeout
	// describes (211 acquisitions in a minute, every node timing out, no
	// lock for 39s after the quarantine), which says nothing of the lock.
	EnvNodeTimeout = "CHAOS_NODE_TIMEOUT"
	// EnvExpectViolations makes finding violations the success (exit 0) and
	// finding none a failure (exit 3): how CI asserts the negative control.
	EnvExpectViolations = "CHAOS_EXPECT_VIOLATIONS"
)

const (
	smokeDuration = 30 * time.Second
	// smokeNodeTimeout is the smoke run's node timeout: under the race
	// detector on a loaded machine, calls past the default 150ms made the
	// smoke take no lock at all, and check nothing. 400ms did the same on
	// a quiet 2-core machine whose containers sit behind Docker's userland
	// proxy (0 to 3 acquisitions in 20s, three runs; 766 with 1s): calls
	// cut by the node timeout close their connections, new ones are set up
	// through two proxies slower than the timeout, and the clients spend
	// the run dialling (about 100 connections a second per node seen).
	smokeNodeTimeout = time.Second
	// setupBudget is the time beyond the run's duration that starting and
	// removing the clusters, the last round of faults and the final check
	// may take on a loaded machine.
	setupBudget = 4 * time.Minute
)

// outcome is what TestChaos leaves for TestMain, which prints the summary
// after everything else and turns the verdict into the exit status.
var outcome struct {
	ran    bool // TestChaos started a run
	result *chaos.Result
	expect bool
	broken bool // the harness failed: no verdict
}

// TestMain runs the tests, checks for leaked goroutines, then prints the
// summary line last and exits with the chaos run's status (see chaos.Exit*).
func TestMain(m *testing.M) {
	// Under faults go-redis logs every failed dial; the run's report says
	// what matters.
	redis.SetLogger(quiet{})
	code := cluster.Reuse(m.Run) // the counters' node serves every run
	if err := goleak.Find(toxiproxyStub); err != nil {
		fmt.Fprintf(os.Stderr, "chaos: leaked goroutines: %v\n", err)
		code = chaos.ExitHarness
	}
	os.Exit(exitStatus(code))
}

// toxiproxyStub ignores toxiproxy goroutines stuck forwarding a chunk of a
// connection whose upstream died under it (a node killed with a request in
// flight): the stub's send is not interruptible and the link's writer has
// exited, so nothing ever drains it, even after the proxy is closed. It is
// toxiproxy's (seen once in a 10-minute run); every other goroutine must end.
var toxiproxyStub = goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run")

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func exitStatus(testCode int) int {
	if !outcome.ran {
		return testCode
	}
	if outcome.result == nil {
		fmt.Fprintln(os.Stderr, "chaos: the run ended without a verdict (see the log above)")
		return chaos.ExitHarness
	}
	fmt.Println(outcome.result.Summary())
	if c := outcome.result.ExitCode(outcome.expect); c != chaos.ExitOK {
		return c
	}
	if outcome.broken || testCode != 0 {
		return chaos.ExitHarness
	}
	return chaos.ExitOK
}

// TestChaos runs clients and a nemesis on five nodes and checks that no two
// holds overlapped, no update was lost and fences increased: for the
// duration in CHAOS_DURATION, or a short smoke run. See the Env constants.
func TestChaos(t *testing.T) {
	cfg, expect, err := configFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if deadline, ok := t.Deadline(); ok && time.Until(deadline) < cfg.Duration+setupBudget {
		t.Fatalf("a %v run needs -timeout of at least %v more than that", cfg.Duration, setupBudget)
	}
	outcome.ran, outcome.expect = true, expect
	res, err := chaos.Run(t, cfg)
	if res.Config.Duration > 0 {
		outcome.result = &res
	}
	if err != nil {
		outcome.broken = true
		t.Fatal(err)
	}
	// A safe run that did not exercise what it should (a workload, the
	// majority-amnesia round, the recovery after it) has no verdict.
	for _, msg := range res.Unexercised() {
		t.Error(msg)
	}
	switch res.ExitCode(expect) {
	case chaos.ExitViolations:
		t.Errorf("%d violations, %d lost updates and %d keys without a TTL (see VIOLATION above)", res.Violations(), res.LostUpdates, len(res.Untimed))
	case chaos.ExitNoViolations:
		t.Errorf("the negative control found no violation in %v in workloads %v: the checker is broken (or the run too short to see the hazard there)", res.Elapsed, res.Missed())
	}
}

func configFromEnv() (chaos.Config, bool, error) {
	cfg := chaos.Config{Duration: smokeDuration, NodeTimeout: smokeNodeTimeout}
	if s := os.Getenv(EnvDuration); s != "" {
		cfg.NodeTimeout = 0 // the default
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return cfg, false, fmt.Errorf("%s=%q: want a positive duration such as 3m", EnvDuration, s)
		}
		cfg.Duration = d
	}
	if s := os.Getenv(EnvNodeTimeout); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return cfg, false, fmt.Errorf("%s=%q: want a positive duration such as 1s", EnvNodeTimeout, s)
		}
		cfg.NodeTimeout = d
	}
	if s := os.Getenv(EnvSeed); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cfg, false, fmt.Errorf("%s=%q: %w", EnvSeed, s, err)
		}
		cfg.Seed = seed
	}
	if s := os.Getenv(EnvClusterShards); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return cfg, false, fmt.Errorf("%s=%q: want a number of masters such as 3", EnvClusterShards, s)
		}
		cfg.ClusterShards = n
	}
	var expect bool
	for _, b := range []struct {
		name string
		dst  *bool
	}{{EnvUnsafe, &cfg.Unsafe}, {EnvFencing, &cfg.Fencing}, {EnvLiveClockJumps, &cfg.LiveClockJumps}, {EnvExpectViolations, &expect}} {
		if s := os.Getenv(b.name); s != "" {
			v, err := strconv.ParseBool(s)
			if err != nil {
				return cfg, false, fmt.Errorf("%s=%q: want true or false", b.name, s)
			}
			*b.dst = v
		}
	}
	return cfg, expect, nil
}

// TestChaosClusters is a short safe run on three Redis Clusters of three
// masters (containers, or processes without a Docker engine), the ordinary
// keys' shard with a replica, the nemesis killing or pausing single shards
// and, first, failing over that shard on two clusters while the holder's
// claims are valid, every workload playing (locks, multi-locks, readers
// and writers, permits, the election): no two holds overlap, no update is
// lost, every workload takes locks, and a failover round counted.
func TestChaosClusters(t *testing.T) {
	res, err := chaos.Run(t, chaos.Config{Duration: clusterSmokeDuration, ClusterShards: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violations() > 0 || res.LostUpdates > 0 {
		t.Errorf("%d violations and %d lost updates (see VIOLATION above)", res.Violations(), res.LostUpdates)
	}
	if res.Acquisitions == 0 || res.FaultCount() == 0 {
		t.Errorf("%d acquisitions under %d faults: the run proved nothing", res.Acquisitions, res.FaultCount())
	}
	if got := res.Config.Workloads(); len(got) != len(chaos.Workloads) {
		t.Errorf("workloads %v: every workload plays on clusters", got)
	}
	for _, msg := range res.Unexercised() { // a failover round among them
		t.Error(msg)
	}
	t.Log(res.Summary())
}

// TestChaosClustersUnsafe is the negative control of the failover round:
// the same round, the clients' quarantine off (and a client writing past
// its validity), must let a second holder in, in every workload.
func TestChaosClustersUnsafe(t *testing.T) {
	res, err := chaos.Run(t, chaos.Config{Duration: clusterSmokeDuration, ClusterShards: 3, Unsafe: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failover.Rounds == 0 {
		t.Errorf("no failover round counted (%d not counted, %d skipped)", res.Failover.Uncounted, res.Failover.Skipped)
	}
	if missed := res.Missed(); len(missed) > 0 {
		t.Errorf("the failover round with the quarantine off found no violation in workloads %v: the round cannot fail", missed)
	}
	t.Log(res.Summary())
}

// clusterSmokeDuration is the length of the cluster runs: the failover
// round, its quarantine (10s), and a few rounds of shard faults, each kill
// held past the 3s TTL; long enough after the quarantine that every
// workload's recovery is judged, the election's too (Result.Unexercised:
// a killed leader leaves it without one for a TTL). At 15s the election's
// went unjudged or, with a 5s window, failed in 2 of 3 runs.
const clusterSmokeDuration = 20 * time.Second

package sim

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

var (
	flagSeeds  = flag.Int("sim.seeds", 20, "how many seeds TestSim runs, from -sim.first")
	flagFirst  = flag.Uint64("sim.first", 1, "the first seed TestSim runs")
	flagSeed   = flag.Uint64("sim.seed", 0, "replay this one seed: print its faults and whole history")
	flagUnsafe = flag.Bool("sim.unsafe", false, "run the known-unsafe setting; fail unless a violation is found")
	flagList   = flag.Bool("sim.list", false, "print one line per seed: its operations, faults and digest")
	flagProcs  = flag.Int("sim.procs", 1, "run the seeds in this many processes (the seeded randomness is one per process)")
	flagShard  = flag.String("sim.shard", "", "i/n: run only the seeds s with s%n == i (set by -sim.procs)")
	flagTrace  = flag.Bool("sim.trace", false, "with -sim.seed: print every message's fate and the keys' values on each node")
	flagTwice  = flag.Bool("sim.twice", false, "run each seed twice, the second time on one processor, and count a different digest as a violation")
)

// runSeed runs one seed in a bubble of its own.
func runSeed(t *testing.T, seed uint64, setting Setting) Report {
	var rep Report
	synctest.Test(t, func(t *testing.T) { rep = Run(t, seed, setting) })
	return rep
}

// totals sums the runs of a budget.
type totals struct{ seeds, ops, faults, violations int }

func (s *totals) add(o totals) {
	s.seeds += o.seeds
	s.ops += o.ops
	s.faults += o.faults
	s.violations += o.violations
}

// TestSim is make sim's and make sim-unsafe's entry point: it runs the seed
// budget and prints one summary line, after the report of the first
// violation of each process (its seed, the history that shows it, its
// digest and the command that replays it).
func TestSim(t *testing.T) {
	asked := false
	flag.Visit(func(f *flag.Flag) { asked = asked || strings.HasPrefix(f.Name, "sim.") })
	if !asked {
		t.Skip("make sim and make sim-unsafe run it, with their budgets (-sim.seeds...)")
	}
	setting, name := Safe, "sim"
	if *flagUnsafe {
		setting, name = NoQuarantine, "sim-unsafe"
	}
	tracing = *flagTrace && *flagSeed != 0
	began := time.Now()
	var sum totals
	if *flagProcs > 1 && *flagShard == "" && *flagSeed == 0 {
		sum = shards(t, *flagProcs)
	} else {
		sum = seeds(t, setting, name)
	}
	line := fmt.Sprintf("%s: %d seeds, %d operations, %d faults, %d violations", name, sum.seeds, sum.ops, sum.faults, sum.violations)
	if *flagShard != "" {
		fmt.Println("shard " + line)
		return
	}
	fmt.Printf("%s (%v)\n", line, time.Since(began).Round(time.Millisecond))
	switch {
	case *flagUnsafe && sum.violations == 0:
		t.Errorf("the unsafe setting found no violation in %d seeds", sum.seeds)
	case !*flagUnsafe && sum.violations > 0:
		t.Errorf("%d violations", sum.violations)
	}
}

// seeds runs this process's seeds (its shard's, with -sim.shard), up to
// the first violation.
func seeds(t *testing.T, setting Setting, name string) totals {
	var i, n uint64 = 0, 1
	if *flagShard != "" {
		if _, err := fmt.Sscanf(*flagShard, "%d/%d", &i, &n); err != nil || n == 0 || i >= n {
			t.Fatalf("-sim.shard=%q: want i/n with i < n", *flagShard)
		}
	}
	var sum totals
	for seed := *flagFirst; seed < *flagFirst+uint64(*flagSeeds); seed++ {
		if *flagSeed != 0 {
			seed = *flagSeed
		} else if seed%n != i {
			continue
		}
		rep := runSeed(t, seed, setting)
		if *flagTwice {
			rep = again(t, rep, setting)
		}
		sum.add(totals{1, rep.Ops, rep.Faults, len(rep.Violations)})
		if *flagList {
			fmt.Printf("seed %d: %d operations, %d faults, %d violations, digest %s; %s\n", seed, rep.Ops, rep.Faults, len(rep.Violations), rep.Digest, rep.Holds)
		}
		if *flagSeed != 0 || len(rep.Violations) > 0 {
			fmt.Print(report(rep, name))
		}
		if *flagSeed != 0 || len(rep.Violations) > 0 && !*flagList {
			break
		}
	}
	return sum
}

// again runs rep's seed again on one processor, and adds a violation to
// rep when the second run's history differs.
func again(t *testing.T, rep Report, setting Setting) Report {
	procs := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(procs)
	if b := runSeed(t, rep.Seed, setting); b.Digest != rep.Digest {
		rep.Violations = append(rep.Violations, fmt.Sprintf("a second run gave digest %s: %s", b.Digest, firstDifference(rep.History, b.History)))
	}
	return rep
}

// shards runs the budget in procs copies of this test binary, each on
// every procs-th seed, forwards their reports and sums their summaries.
func shards(t *testing.T, procs int) totals {
	var (
		mu  sync.Mutex
		sum totals
		wg  sync.WaitGroup
	)
	for i := range procs {
		args := []string{"-test.run=^TestSim$", fmt.Sprintf("-sim.shard=%d/%d", i, procs)}
		for _, f := range []string{"sim.seeds", "sim.first", "sim.unsafe", "sim.list", "sim.twice"} {
			args = append(args, fmt.Sprintf("-%s=%v", f, flag.Lookup(f).Value))
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Stderr = os.Stderr
		if os.Getenv("GOMAXPROCS") == "" {
			// One process per processor: a run's goroutines mostly take
			// turns, and one P spares them the scheduler's hand-offs.
			cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			lines := bufio.NewScanner(out)
			for lines.Scan() {
				var s totals
				var name string
				line := lines.Text()
				if _, err := fmt.Sscanf(line, "shard %s %d seeds, %d operations, %d faults, %d violations", &name, &s.seeds, &s.ops, &s.faults, &s.violations); err == nil {
					mu.Lock()
					sum.add(s)
					mu.Unlock()
					continue
				}
				if line != "PASS" && !strings.HasPrefix(line, "--- ") {
					mu.Lock()
					fmt.Println(line)
					mu.Unlock()
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("shard %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	return sum
}

// report formats a run for a person: its parameters, violations, faults,
// the history that shows the first violation (the whole history when
// replaying one seed), its digest and how to replay it.
func report(rep Report, name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %s\n", rep.Seed, rep.Params)
	for _, v := range rep.Violations {
		fmt.Fprintf(&b, "  VIOLATION: %s\n", v)
	}
	lines := rep.Shown
	if *flagSeed != 0 {
		lines = rep.History
	}
	if rep.Trace != nil {
		lines = rep.Trace
	}
	for _, line := range append(rep.Faulted, lines...) {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	fmt.Fprintf(&b, "seed %d: %d operations, %d faults, digest %s; replay: make %s SEED=%d\n", rep.Seed, rep.Ops, rep.Faults, rep.Digest, name, rep.Seed)
	return b.String()
}

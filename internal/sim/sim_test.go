package sim

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

var (
	flagSeeds  = flag.Int("sim.seeds", 20, "how many seeds TestSim runs, from -sim.first")
	flagFirst  = flag.Uint64("sim.first", 1, "the first seed TestSim runs")
	flagSeed   = flag.Uint64("sim.seed", 0, "replay this one seed (prints its history)")
	flagUnsafe = flag.Bool("sim.unsafe", false, "run the known-unsafe setting; fail unless a violation is found")
	flagList   = flag.Bool("sim.list", false, "print one line per seed: its operations, faults and digest")
)

// runSeed runs one seed in a bubble of its own.
func runSeed(t *testing.T, seed uint64, setting Setting) Report {
	var rep Report
	synctest.Test(t, func(t *testing.T) { rep = Run(t, seed, setting) })
	return rep
}

// TestSim is make sim's and make sim-unsafe's entry point: it runs the seed
// budget and prints one summary line.
func TestSim(t *testing.T) {
	setting, name := Safe, "sim"
	if *flagUnsafe {
		setting, name = NoQuarantine, "sim-unsafe"
	}
	first, count := *flagFirst, uint64(*flagSeeds)
	if *flagSeed != 0 {
		first, count = *flagSeed, 1
	}
	began := time.Now()
	var ops, faults, violations, seeds int
	for seed := first; seed < first+count; seed++ {
		rep := runSeed(t, seed, setting)
		seeds++
		ops += rep.Ops
		faults += rep.Faults
		violations += len(rep.Violations)
		if *flagSeed != 0 || len(rep.Violations) > 0 {
			fmt.Print(report(rep, name))
		}
		if *flagList {
			fmt.Printf("seed %d: %d operations, %d faults, %d violations, digest %s\n", seed, rep.Ops, rep.Faults, len(rep.Violations), rep.Digest)
		}
		if len(rep.Violations) > 0 && !*flagList {
			break
		}
	}
	fmt.Printf("%s: %d seeds, %d operations, %d faults, %d violations (%v)\n", name, seeds, ops, faults, violations, time.Since(began).Round(time.Millisecond))
	switch {
	case *flagUnsafe && violations == 0:
		t.Errorf("the unsafe setting found no violation in %d seeds", seeds)
	case !*flagUnsafe && violations > 0:
		t.Errorf("%d violations", violations)
	}
}

// report formats a run for a person: its parameters, violations, the
// history that shows the first, its digest and how to replay it.
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
	for _, line := range append(rep.Faulted, lines...) {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	fmt.Fprintf(&b, "seed %d: %d operations, %d faults, digest %s; replay: make %s SEED=%d\n", rep.Seed, rep.Ops, rep.Faults, rep.Digest, name, rep.Seed)
	return b.String()
}

package chaos

import (
	"fmt"
	"strings"
	"time"
)

// Result is a run's outcome: the checker's report and what was injected.
type Result struct {
	Report
	Config Config
	// Faults counts the injected faults by kind.
	Faults map[string]int
	// Failed counts acquisition calls (Lock, LockAll, RLock,
	// AcquirePermit) that returned an error (expected under faults); Skipped the writes not made because validity had run out;
	// ReadErrors the holds whose read of the store failed.
	Failed, Skipped, ReadErrors int64
	// LongHolds counts the holds kept past the TTL by auto-extension, and
	// LostLocks those reported lost (ErrLockLost) before the work was done.
	LongHolds, LostLocks int64
	// MultiLocks counts the multi-locks obtained (LockAll over two keys).
	MultiLocks int64
	Elapsed    time.Duration
}

// FaultCount is the number of faults injected, all kinds together.
func (r Result) FaultCount() int {
	n := 0
	for _, c := range r.Faults {
		n += c
	}
	return n
}

// Summary is the run's one-line verdict, then each workload the run
// played with its holds and the violations it is party to.
func (r Result) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "acquisitions=%d faults=%d violations=%d lost_updates=%d",
		r.Acquisitions, r.FaultCount(), r.Violations(), r.LostUpdates)
	for _, w := range r.Config.Workloads() {
		x := r.Workload(w)
		fmt.Fprintf(&b, " | %s holds=%d violations=%d", w, x.Holds, x.Violations)
	}
	return b.String()
}

// Found reports whether the checker found any violation or lost update.
func (r Result) Found() bool { return r.Violations() > 0 || r.LostUpdates > 0 }

// Missed returns the workloads the run played in which the checker found
// no violation: in a negative control, each is a workload whose hazard
// went unseen.
func (r Result) Missed() []Workload {
	var out []Workload
	for _, w := range r.Config.Workloads() {
		if r.Workload(w).Violations == 0 {
			out = append(out, w)
		}
	}
	return out
}

// Workloads lists the workloads c plays: Exclusive always, the others
// unless disabled (MultiEvery, RWClients or PermitClients not positive).
func (c Config) Workloads() []Workload {
	out := []Workload{Exclusive}
	if c.MultiEvery > 0 {
		out = append(out, Multi)
	}
	if c.RWClients > 0 {
		out = append(out, RW)
	}
	if c.PermitClients > 0 {
		out = append(out, Permits)
	}
	return out
}

// Exit statuses of a chaos run.
const (
	// ExitOK: the run met its expectation.
	ExitOK = 0
	// ExitViolations: violations or lost updates were found, unexpected.
	ExitViolations = 1
	// ExitHarness: no verdict; the cluster could not be started or
	// repaired, goroutines leaked, or another test failed.
	ExitHarness = 2
	// ExitNoViolations: violations were expected (an unsafe run) and none
	// were found: the negative control failed, the checker is broken.
	ExitNoViolations = 3
)

// ExitCode maps the result to an exit status. An unsafe run that finds
// violations exits ExitViolations, like a safe one, unless
// expectViolations says that finding them is the point, in every workload
// the run played (Missed is empty); finding none, or none in one of its
// workloads, is ExitNoViolations whenever violations were expected or the
// run was unsafe.
func (r Result) ExitCode(expectViolations bool) int {
	switch {
	case r.Found() && !expectViolations:
		return ExitViolations
	case r.Found() && len(r.Missed()) == 0:
		return ExitOK
	case expectViolations || r.Config.Unsafe:
		return ExitNoViolations
	}
	return ExitOK
}

// maxListed bounds the violations of each kind written to the log.
const maxListed = 20

// log writes the report: faults by kind, per-key load and counters,
// per-workload counts, violations.
func (r Result) log(logf func(string, ...any)) {
	logf("chaos: %d acquisitions in %v (%.0f/s); %d Lock calls failed; %d writes skipped (validity over); "+
		"%d store reads failed; %d holds past the TTL by auto-extension, %d of them lost; %d multi-locks (LockAll)",
		r.Acquisitions, r.Elapsed.Round(time.Millisecond), float64(r.Acquisitions)/r.Elapsed.Seconds(),
		r.Failed, r.Skipped, r.ReadErrors, r.LongHolds, r.LostLocks, r.MultiLocks)
	for _, k := range kinds(r.Faults) {
		logf("chaos: fault %-48s x%d", k, r.Faults[k])
	}
	for _, l := range r.Load {
		logf("chaos: key %s: %d acquisitions by %d holders, %d contended; up to %d Lock calls and %d holders at once; wait p50 %v, max %v",
			l.Key, l.Acquisitions, l.Holders, l.Contended, l.PeakCalls, l.PeakHolders,
			l.WaitP50.Round(time.Millisecond), l.WaitMax.Round(time.Millisecond))
	}
	for _, c := range r.Counters {
		logf("chaos: counter %s: final=%d committed=%d unknown=%d rejected=%d lost=%d",
			c.Key, c.Final, c.Committed, c.Unknown, c.Rejects, c.Lost)
	}
	for _, w := range r.Config.Workloads() {
		x := r.Workload(w)
		logf("chaos: workload %s: %d holds, %d violations", w, x.Holds, x.Violations)
	}
	listed(logf, "overlap", r.Overlaps)
	listed(logf, "excess", r.Excesses)
	listed(logf, "fence", r.FenceViolations)
}

// listed logs up to maxListed violations of one kind.
func listed[T fmt.Stringer](logf func(string, ...any), kind string, vs []T) {
	for i, v := range vs {
		if i == maxListed {
			logf("chaos: ... %d more %s violations", len(vs)-maxListed, kind)
			return
		}
		logf("chaos: VIOLATION %s: %v", kind, v)
	}
}

package chaos

import (
	"fmt"
	"slices"
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
	// Amnesia is what the amnesia rounds did (the majority-amnesia rounds
	// of the safe run, the victim's rounds of the unsafe one).
	Amnesia AmnesiaReport
	// Failover is what the failover rounds on clusters did (shards.go):
	// the same counts, a round counted when every claim of the holder
	// stayed valid from before the first takeover until the new masters
	// served and the holder had lingered.
	Failover AmnesiaReport
	// SatOut is how long each node restarted without its data sat out
	// before it counted again by its horizon (a NodeReturned event: the
	// run's age when the first client counted it). A node whose peers could
	// not vouch for it (a majority's amnesia) sits out the whole quarantine
	// and is not in it.
	SatOut  []time.Duration
	Elapsed time.Duration
	// Untimed lists the keys ("node i: key") that the lock nodes held
	// without a TTL at the end of the run, beyond the ones the library keeps
	// so on purpose (audit.go): any is a failure, whatever the run expected.
	Untimed []string
}

// AmnesiaReport is what a run's amnesia rounds did: a majority of the
// nodes, none persisting, killed and started again at once, empty, while
// a holder kept a claim of every workload the run plays.
type AmnesiaReport struct {
	// Rounds counts the rounds that tested the case: every claim of the
	// holder stayed valid from before the kill until the nodes were back
	// and the holder had lingered there (victimLinger).
	Rounds int
	// Uncounted counts the rounds played in which a claim ran out first
	// (the restart outlasted it); Skipped the safe rounds not played
	// because the holder could not take its claims.
	Uncounted, Skipped int
	// SlowestRestart is the longest time from a round's kill to its last
	// node back.
	SlowestRestart time.Duration
	// QuarantineEnd is when, after the run began, the clients' quarantine
	// of the first counted round's nodes ended (zero without a counted
	// round); HoldsAfter counts each workload's holds begun after it.
	QuarantineEnd time.Duration
	HoldsAfter    map[Workload]int
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
	fmt.Fprintf(&b, "acquisitions=%d faults=%d violations=%d lost_updates=%d untimed_keys=%d majority_amnesia_rounds=%d failover_rounds=%d",
		r.Acquisitions, r.FaultCount(), r.Violations(), r.LostUpdates, len(r.Untimed), r.Amnesia.Rounds, r.Failover.Rounds)
	if n := len(r.SatOut); n > 0 {
		s := slices.Sorted(slices.Values(r.SatOut))
		fmt.Fprintf(&b, " restarts_returned=%d sat_out_p50=%v sat_out_max=%v", n,
			s[n/2].Round(100*time.Millisecond), s[n-1].Round(100*time.Millisecond))
	}
	for _, w := range r.Config.Workloads() {
		x := r.Workload(w)
		holds := "holds"
		if w == Election {
			holds = "leaderships"
		}
		fmt.Fprintf(&b, " | %s %s=%d violations=%d", w, holds, x.Holds, x.Violations)
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

// What a safe run must have exercised (Unexercised).
const (
	// minAmnesiaRun is the shortest safe run that must have a counted
	// majority-amnesia round: the first round of the schedule is one, and
	// takes a few seconds (the holder's claims, three restarts, the linger).
	minAmnesiaRun = 15 * time.Second
	// recoverWindow is the time after the first majority quarantine in
	// which every workload must take a lock again, if the run lasts that
	// long: the quarantine costs availability only while it lasts.
	recoverWindow = 5 * time.Second
	// recoverGrace is how long past the run's duration the holder goes on
	// trying to take its own claims again after a quarantine
	// (claimsAfter), the evidence of recovery: long enough for a machine
	// at load average 12 on two cores, whose calls then mostly time out,
	// to let one through; a run that already has that evidence ends on
	// time.
	recoverGrace = 20 * time.Second
)

// Unexercised lists what a safe run should have exercised and did not, each
// as a sentence: a workload that took no lock; no counted majority-amnesia
// round in a run that plays them and lasted minAmnesiaRun; a workload that
// took no lock after the first such round's quarantine ended, in a run that
// went on recoverWindow past it. The holder takes its own claim of every
// workload after each quarantine, trying until recoverGrace past the
// run's end (claimsAfter): a workload's workers may take nothing there on
// a loaded machine, or behind single-key waiters (multi-locks), while the
// quarantine has ended. During that quarantine fewer than a
// majority of the nodes count, so nobody takes a lock: only the run as a
// whole, and the time after it, say whether each workload was live. An
// unsafe run is judged by Missed instead, and has nothing here.
func (r Result) Unexercised() []string {
	if r.Config.Unsafe {
		return nil
	}
	var out []string
	for _, w := range r.Config.Workloads() {
		if r.Workload(w).Holds == 0 {
			out = append(out, fmt.Sprintf("workload %s took no lock in %v: the run checked nothing there (is the machine overloaded?)", w, r.Elapsed.Round(time.Second)))
		}
	}
	out = append(out, r.roundsUnexercised("majority-amnesia", "restart", r.Config.playsMajorityAmnesia(), r.Amnesia)...)
	return append(out, r.roundsUnexercised("failover", "failover", r.Config.playsFailover(), r.Failover)...)
}

// roundsUnexercised is Unexercised for one kind of round (name) that a
// holder keeps its claims through, testing the quarantine of what.
func (r Result) roundsUnexercised(name, what string, plays bool, a AmnesiaReport) []string {
	var out []string
	active := r.acquiring()
	switch {
	case !plays:
	case a.Rounds == 0 && active >= minAmnesiaRun:
		out = append(out, fmt.Sprintf("no %s round counted in %v (%d not counted, %d skipped): the %s quarantine went untested", name, active.Round(time.Second), a.Uncounted, a.Skipped, what))
	case a.Rounds > 0:
		for _, w := range r.Config.Workloads() {
			if active-a.QuarantineEnd >= r.Config.recoverWindow(w) && a.HoldsAfter[w] == 0 {
				out = append(out, fmt.Sprintf("workload %s took no lock in the %v after the first %s quarantine ended, nor the holder its own claim of it by %v past the run: the run did not recover from it",
					w, (active-a.QuarantineEnd).Round(time.Second), name, recoverGrace))
			}
		}
	}
	return out
}

// acquiring is how long the workloads took locks: the run's duration, or
// less when the run was cut short. Elapsed also counts the wind-down after
// it (the nemesis finishing a round, the workers returning), in which no
// lock is begun, so it cannot judge a recovery: a quarantine that ended
// 0.1s before the duration, in a run whose wind-down took 5s more, once
// failed the recovery check.
func (r Result) acquiring() time.Duration {
	if r.Config.Duration > 0 {
		return min(r.Elapsed, r.Config.Duration)
	}
	return r.Elapsed
}

// recoverWindow is the time after the first quarantine in which workload
// w must take a lock again, if the run lasts that long: recoverWindow, and
// for the election one leadership TTL more, as long as a killed leader
// (never two in a row) leaves it without one.
func (c Config) recoverWindow(w Workload) time.Duration {
	if w == Election {
		return recoverWindow + c.electionTTL()
	}
	return recoverWindow
}

// Workloads lists the workloads c plays: Exclusive always, the others
// unless disabled (MultiEvery, RWClients, PermitClients or
// ElectionClients not positive).
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
	if c.ElectionClients > 0 {
		out = append(out, Election)
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
// run was unsafe. Keys left without a TTL (Untimed) exit ExitViolations
// in every run.
func (r Result) ExitCode(expectViolations bool) int {
	switch {
	case len(r.Untimed) > 0:
		return ExitViolations
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
	if slices.Contains(r.Config.Workloads(), Election) {
		logf("chaos: election: %d leaderships, %d leaders received by %d Observe streams; %d terms began again after a majority amnesia (its counter forgotten: not judged)",
			r.Workload(Election).Holds, r.Observed, electionStreams, r.TermRestarts)
	}
	r.Amnesia.log(logf, "majority-amnesia", r.Config.Workloads())
	r.Failover.log(logf, "failover", r.Config.Workloads())
	listed(logf, "overlap", r.Overlaps)
	listed(logf, "excess", r.Excesses)
	listed(logf, "fence", r.FenceViolations)
	listed(logf, "term", r.TermViolations)
}

// log writes what the rounds of one kind (name) did.
func (a AmnesiaReport) log(logf func(string, ...any), name string, workloads []Workload) {
	if a.Rounds+a.Uncounted+a.Skipped > 0 {
		logf("chaos: %s rounds: %d counted, %d not counted (a claim ran out before the nodes were back), %d skipped (claims not taken); slowest fault %v",
			name, a.Rounds, a.Uncounted, a.Skipped, a.SlowestRestart.Round(time.Millisecond))
	}
	if a.Rounds > 0 {
		var after []string
		for _, w := range workloads {
			after = append(after, fmt.Sprintf("%s %d", w, a.HoldsAfter[w]))
		}
		logf("chaos: the first %s quarantine ended %v into the run; holds begun after it: %s",
			name, a.QuarantineEnd.Round(time.Millisecond), strings.Join(after, ", "))
	}
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

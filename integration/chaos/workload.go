package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Workload is one kind of use of the lock family in a run, judged and
// reported on its own.
type Workload int

// The workloads of a run.
const (
	// Exclusive: Lock on one key (the ordinary and the hot team).
	Exclusive Workload = iota
	// Multi: LockAll over two keys the Exclusive holds use too.
	Multi
	// RW: readers (RLock) and writers (Lock) on keys of their own.
	RW
	// Permits: AcquirePermit on a key of its own, with a limit.
	Permits
	// Election: Campaign on an election of its own; a hold is a leadership
	// and its fence the term (election.go).
	Election
)

// Workloads lists every workload, in the order reports give them.
var Workloads = []Workload{Exclusive, Multi, RW, Permits, Election}

// String names the workload as the summary line does.
func (w Workload) String() string {
	switch w {
	case Exclusive:
		return "exclusive"
	case Multi:
		return "multi"
	case RW:
		return "rw"
	case Permits:
		return "permits"
	case Election:
		return "election"
	}
	return fmt.Sprintf("Workload(%d)", int(w))
}

// WorkloadReport is one workload's part of a Report.
type WorkloadReport struct {
	Workload Workload
	// Holds counts the workload's holds (a multi-lock counts once per key,
	// a leadership once).
	Holds int
	// Violations counts the overlaps, excesses and fence violations that
	// involve a hold or write of the workload; an overlap of holds of two
	// workloads counts in both. The election's include its term violations
	// (TermViolations).
	Violations int
}

// Excess is a moment when more holds of a permit key were relied upon at
// once than its limit: Holds are those relied upon when the last of them
// began, which is the one that went over.
type Excess struct {
	Key   string
	Limit int
	Holds []Hold
}

func (e Excess) String() string {
	var hs []string
	for _, h := range e.Holds {
		hs = append(hs, fmt.Sprintf("client %d [%s]", h.Client, span(h)))
	}
	return fmt.Sprintf("key %s: %d holders at once, limit %d: %s", e.Key, len(e.Holds), e.Limit, strings.Join(hs, ", "))
}

// excesses returns every moment (of one key's holds, the permits of one
// key) at which a hold began while Limit or more others were relied upon,
// by a sweep over the holds in order of Start.
func excesses(hs []Hold) []Excess {
	var out []Excess
	sweep(hs, func(active []Hold, h Hold) {
		if len(active) >= h.Limit {
			out = append(out, Excess{Key: h.Key, Limit: h.Limit, Holds: append(slices.Clone(active), h)})
		}
	})
	return out
}

// sweep calls visit for each non-empty hold, in order of Start, with the
// earlier holds still relied upon when it began.
func sweep(hs []Hold, visit func(active []Hold, h Hold)) {
	hs = slices.Clone(hs)
	slices.SortFunc(hs, func(a, b Hold) int {
		return cmp.Or(a.Start.Compare(b.Start), a.End.Compare(b.End))
	})
	var active []Hold // holds whose End is after the current Start
	for _, h := range hs {
		if !h.End.After(h.Start) {
			continue // relied upon for no time at all
		}
		active = slices.DeleteFunc(active, func(a Hold) bool { return !a.End.After(h.Start) })
		visit(active, h)
		active = append(active, h)
	}
}

// byWorkload counts each workload's holds and the violations it is party to.
func byWorkload(r Report, holds []Hold) []WorkloadReport {
	out := make([]WorkloadReport, len(Workloads))
	for i, w := range Workloads {
		out[i].Workload = w
	}
	at := func(w Workload) *WorkloadReport {
		if i := slices.Index(Workloads, w); i >= 0 {
			return &out[i]
		}
		return &WorkloadReport{} // unknown workload: not reported
	}
	for _, h := range holds {
		at(h.Workload).Holds++
	}
	for _, o := range r.Overlaps {
		at(o.A.Workload).Violations++
		if o.B.Workload != o.A.Workload {
			at(o.B.Workload).Violations++
		}
	}
	for range r.Excesses {
		at(Permits).Violations++
	}
	for _, v := range r.FenceViolations {
		at(v.Workload).Violations++
	}
	at(Election).Violations += len(r.TermViolations)
	return out
}

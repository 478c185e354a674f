package chaos

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Report is the checker's verdict on a History.
type Report struct {
	// Acquisitions counts the holds: successful Lock calls.
	Acquisitions int
	// Overlaps lists every pair of holds of the same key whose intervals
	// [Start, End) intersect, unless both are readers' (Hold.Shared): two
	// clients relying on an exclusive hold at once. Permit keys (holds with
	// a Limit) are judged by Excesses instead.
	Overlaps []Overlap
	// Excesses lists every moment a permit key had more holds relied upon
	// at once than its limit.
	Excesses []Excess
	// FenceViolations lists fences that did not increase: at the lock (a
	// later acquisition got a fence no greater than an earlier one's) or at
	// the store (an accepted write whose fence was not above every fence
	// accepted before it).
	FenceViolations []FenceViolation
	// Load has one entry per key with holds, by key: how contended it was.
	Load []KeyLoad
	// Counters has one entry per key with writes or a final value, by key.
	Counters []Counter
	// LostUpdates sums Counter.Lost over the keys.
	LostUpdates int64
	// TermViolations lists the election's terms that did not increase: a
	// leadership whose term was not above every earlier leadership's, or
	// an Observe stream that saw a term after a greater one
	// (election_check.go). Leaderships are judged by these instead of the
	// lock's fence rule; their overlaps are Overlaps.
	TermViolations []TermViolation
	// TermRestarts counts the leaderships whose term was not above an
	// earlier one's because a majority amnesia came between them (no
	// violation: see History.Amnesias); Observed counts the leaders the
	// Observe streams received.
	TermRestarts, Observed int
	// Workloads has one entry per workload, in the order of Workloads.
	Workloads []WorkloadReport
}

// Violations counts the safety violations other than lost updates:
// overlapping pairs, excesses, fence and term violations.
func (r Report) Violations() int {
	return len(r.Overlaps) + len(r.Excesses) + len(r.FenceViolations) + len(r.TermViolations)
}

// Workload returns w's part of the report (zero when w had nothing).
func (r Report) Workload(w Workload) WorkloadReport {
	for _, x := range r.Workloads {
		if x.Workload == w {
			return x
		}
	}
	return WorkloadReport{Workload: w}
}

// Overlap is two holds of one key that were relied upon at the same time;
// A started first.
type Overlap struct {
	A, B Hold
}

// Duration is how long both holds were relied upon.
func (o Overlap) Duration() time.Duration {
	end := o.A.End
	if o.B.End.Before(end) {
		end = o.B.End
	}
	return end.Sub(o.B.Start)
}

func (o Overlap) String() string {
	return fmt.Sprintf("key %s: client %d (%s) [%s] and client %d (%s) [%s] overlap for %v",
		o.A.Key, o.A.Client, holdKind(o.A), span(o.A), o.B.Client, holdKind(o.B), span(o.B), o.Duration())
}

// FenceViolation is a fence that was not strictly greater than one issued
// or accepted before it.
type FenceViolation struct {
	// Where is "lock" (fences handed out by acquisitions) or "store" (fences
	// the resource accepted).
	Where string
	Key   string
	// Workload is the offender's.
	Workload Workload
	// Client and Fence are the offender; Prior is the greater-or-equal fence
	// that came before it, from client PriorClient.
	Client, PriorClient int
	Fence, Prior        uint64
}

func (v FenceViolation) String() string {
	return fmt.Sprintf("key %s: %s fence %d of client %d is not above fence %d of client %d before it",
		v.Key, v.Where, v.Fence, v.Client, v.Prior, v.PriorClient)
}

// KeyLoad is how contended one key was, from its acquisitions (Lock calls
// that failed are not in the history).
type KeyLoad struct {
	Key string
	// Acquisitions counts the key's holds; Holders the distinct clients
	// (Hold.Client) among them.
	Acquisitions, Holders int
	// Contended counts the acquisitions whose Lock call [Begin, Start)
	// overlapped another acquisition's call or hold [Begin, End) of the key:
	// each competed for the lock.
	Contended int
	// PeakCalls is the most Lock calls of the key in progress at once.
	PeakCalls int
	// PeakHolders is the most holds of the key relied upon at once: 1 for
	// an exclusive key in a clean run, up to the limit for a permit key,
	// more with readers.
	PeakHolders int
	// WaitP50 and WaitMax are the median and longest time from a Lock
	// call's beginning to its lock (Start - Begin).
	WaitP50, WaitMax time.Duration
}

// Counter is the accounting of one key's counter: every committed write
// added one, so the final value must equal Committed, give or take the
// writes whose outcome is unknown.
type Counter struct {
	Key                         string
	Committed, Unknown, Rejects int64
	Final                       int64
	// Lost is the number of committed increments missing from Final (or,
	// should Final exceed every possible write, the surplus).
	Lost int64
}

// Check judges h: every overlapping pair of holds per key, every fence or
// term that did not increase, and every counter that does not add up. It also
// measures how contended each key was (Report.Load), which judges nothing.
func Check(h History) Report {
	r := Report{Acquisitions: len(h.Holds)}
	holds := groupBy(h.Holds, func(x Hold) string { return x.Key })
	writes := groupBy(h.Writes, func(x Write) string { return x.Key })
	keys := make(map[string]bool)
	for k := range holds {
		keys[k] = true
	}
	for k := range writes {
		keys[k] = true
	}
	for k := range h.Final {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if len(holds[k]) > 0 {
			r.Load = append(r.Load, load(k, holds[k]))
		}
		if slices.ContainsFunc(holds[k], func(h Hold) bool { return h.Limit > 0 }) {
			r.Excesses = append(r.Excesses, excesses(holds[k])...)
		} else {
			r.Overlaps = append(r.Overlaps, overlaps(holds[k])...)
		}
		if slices.ContainsFunc(holds[k], func(h Hold) bool { return h.Workload == Election }) {
			vs, restarts := leadershipTerms(holds[k], h.Amnesias)
			r.TermViolations = append(r.TermViolations, vs...)
			r.TermRestarts += restarts
		} else {
			r.FenceViolations = append(r.FenceViolations, lockFences(holds[k])...)
		}
		r.FenceViolations = append(r.FenceViolations, storeFences(writes[k])...)
		if _, ok := h.Final[k]; !ok && len(writes[k]) == 0 {
			continue // a key that guards no counter (a permit key)
		}
		c := count(k, writes[k], h.Final[k])
		r.Counters = append(r.Counters, c)
		r.LostUpdates += c.Lost
	}
	r.TermViolations = append(r.TermViolations, observedTerms(h.Observations)...)
	r.Observed = len(h.Observations)
	r.Workloads = byWorkload(r, h.Holds)
	return r
}

// overlaps returns every pair of non-empty holds (of one key) whose
// intervals intersect, but for pairs of readers.
func overlaps(hs []Hold) []Overlap {
	var out []Overlap
	sweep(hs, func(active []Hold, h Hold) {
		for _, a := range active {
			if !a.Shared || !h.Shared {
				out = append(out, Overlap{A: a, B: h})
			}
		}
	})
	return out
}

// load measures the contention on one key from its holds.
func load(key string, hs []Hold) KeyLoad {
	l := KeyLoad{Key: key, Acquisitions: len(hs)}
	holders := make(map[int]bool)
	waits := make([]time.Duration, 0, len(hs))
	begins := make([]time.Time, 0, len(hs))
	ends := make([]time.Time, 0, len(hs))
	for _, h := range hs {
		holders[h.Client] = true
		waits = append(waits, h.Start.Sub(h.Begin))
		if h.End.After(h.Begin) { // an empty tenure meets nothing
			begins = append(begins, h.Begin)
			ends = append(ends, h.End)
		}
	}
	l.Holders = len(holders)
	slices.Sort(waits)
	l.WaitP50, l.WaitMax = waits[(len(waits)-1)/2], waits[len(waits)-1]
	slices.SortFunc(begins, time.Time.Compare)
	slices.SortFunc(ends, time.Time.Compare)
	for _, h := range hs {
		if !h.Start.After(h.Begin) {
			continue // no time spent in Lock
		}
		// Tenures [Begin, End) meeting [h.Begin, h.Start): those begun
		// before h.Start, less those ended by h.Begin; h's own among them.
		n := countBefore(begins, h.Start) - countBefore(ends, h.Begin.Add(1))
		if h.End.After(h.Begin) {
			n--
		}
		if n > 0 {
			l.Contended++
		}
	}
	l.PeakCalls = peak(hs)
	sweep(hs, func(active []Hold, _ Hold) { l.PeakHolders = max(l.PeakHolders, len(active)+1) })
	return l
}

// countBefore returns how many of the sorted times are before t.
func countBefore(sorted []time.Time, t time.Time) int {
	n, _ := slices.BinarySearchFunc(sorted, t, func(x, t time.Time) int {
		if x.Before(t) {
			return -1
		}
		return 1
	})
	return n
}

// peak returns the most Lock calls [Begin, Start) in progress at once.
func peak(hs []Hold) int {
	type event struct {
		at    time.Time
		delta int
	}
	events := make([]event, 0, 2*len(hs))
	for _, h := range hs {
		if h.Start.After(h.Begin) {
			events = append(events, event{h.Begin, 1}, event{h.Start, -1})
		}
	}
	// At equal times a call ends before another begins.
	slices.SortFunc(events, func(a, b event) int { return cmp.Or(a.at.Compare(b.at), a.delta-b.delta) })
	cur, top := 0, 0
	for _, e := range events {
		cur += e.delta
		top = max(top, cur)
	}
	return top
}

// lockFences checks the lock's promise: an acquisition whose Lock call
// began after another acquisition of the key had returned gets a greater
// fence. Holds without a fence are ignored.
func lockFences(hs []Hold) []FenceViolation {
	hs = slices.DeleteFunc(slices.Clone(hs), func(h Hold) bool { return h.Fence == 0 })
	byStart := slices.SortedFunc(slices.Values(hs), func(a, b Hold) int { return a.Start.Compare(b.Start) })
	byBegin := slices.SortedFunc(slices.Values(hs), func(a, b Hold) int { return a.Begin.Compare(b.Begin) })
	var out []FenceViolation
	var top *Hold // the greatest fence among the holds returned so far
	i := 0
	for _, h := range byBegin {
		for ; i < len(byStart) && byStart[i].Start.Before(h.Begin); i++ {
			if top == nil || byStart[i].Fence > top.Fence {
				top = &byStart[i]
			}
		}
		if top != nil && h.Fence <= top.Fence {
			out = append(out, FenceViolation{Where: "lock", Key: h.Key, Workload: h.Workload, Client: h.Client, Fence: h.Fence,
				PriorClient: top.Client, Prior: top.Fence})
		}
	}
	return out
}

// storeFences checks the resource's side: each accepted write's fence is
// above the fence of every write accepted before it was sent, and no two
// accepted writes share a fence (concurrent ones included). Only committed
// writes with a fence count.
func storeFences(ws []Write) []FenceViolation {
	ws = slices.DeleteFunc(slices.Clone(ws), func(w Write) bool { return w.Outcome != Committed || w.Fence == 0 })
	byDone := slices.SortedFunc(slices.Values(ws), func(a, b Write) int { return a.Done.Compare(b.Done) })
	bySent := slices.SortedFunc(slices.Values(ws), func(a, b Write) int { return a.Sent.Compare(b.Sent) })
	var out []FenceViolation
	var top *Write
	seen := make(map[uint64]Write)
	i := 0
	for _, w := range bySent {
		for ; i < len(byDone) && byDone[i].Done.Before(w.Sent); i++ {
			if top == nil || byDone[i].Fence > top.Fence {
				top = &byDone[i]
			}
		}
		v := FenceViolation{Where: "store", Key: w.Key, Workload: w.Workload, Client: w.Client, Fence: w.Fence}
		if top != nil && w.Fence <= top.Fence {
			v.PriorClient, v.Prior = top.Client, top.Fence
			out = append(out, v)
		} else if dup, ok := seen[w.Fence]; ok {
			v.PriorClient, v.Prior = dup.Client, dup.Fence
			out = append(out, v)
		}
		seen[w.Fence] = w
	}
	return out
}

// count does the accounting of one key's counter.
func count(key string, ws []Write, final int64) Counter {
	c := Counter{Key: key, Final: final}
	for _, w := range ws {
		switch w.Outcome {
		case Committed:
			c.Committed++
		case Unknown:
			c.Unknown++
		case Rejected:
			c.Rejects++
		}
	}
	switch {
	case final < c.Committed:
		c.Lost = c.Committed - final
	case final > c.Committed+c.Unknown:
		c.Lost = final - c.Committed - c.Unknown
	}
	return c
}

func groupBy[T any](xs []T, key func(T) string) map[string][]T {
	out := make(map[string][]T)
	for _, x := range xs {
		out[key(x)] = append(out[key(x)], x)
	}
	return out
}

// holdKind names what a hold was: its workload, and "reader" for a reader.
func holdKind(h Hold) string {
	if h.Shared {
		return h.Workload.String() + " reader"
	}
	return h.Workload.String()
}

func span(h Hold) string {
	return fmt.Sprintf("%s..%s", h.Start.Format("15:04:05.000"), h.End.Format("15:04:05.000"))
}

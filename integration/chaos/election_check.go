package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// The election's own rules (docs/election.md, Guarantees): terms strictly
// increase in the order the leaderships began, and an Observe stream never
// goes back to a lower term. That no two leaderships overlap is the lock's
// rule, judged by Check's overlaps on the leaderships' holds.

// Observation is one leader an Observe stream received.
type Observation struct {
	// Election is the election's name; Stream identifies the stream.
	Election string
	Stream   int
	// Term is the leader's term; 0 for the zero Leader (a lapse).
	Term uint64
	// At is when the stream received it.
	At time.Time
}

// TermViolation is a term that was not above one that came before it: a
// leadership's term (Where "leadership", Client and PriorClient the
// campaigners) or one an Observe stream received (Where "observer",
// Client the stream).
type TermViolation struct {
	Where    string
	Election string
	// Client, Term and At are the offender; Prior is the greater-or-equal
	// term before it, from PriorClient.
	Client, PriorClient int
	Term, Prior         uint64
	At                  time.Time
}

func (v TermViolation) String() string {
	if v.Where == "observer" {
		return fmt.Sprintf("election %s: observer %d received term %d at %s after term %d",
			v.Election, v.Client, v.Term, v.At.Format("15:04:05.000"), v.Prior)
	}
	return fmt.Sprintf("election %s: the leadership of client %d from %s has term %d, not above term %d of client %d before it",
		v.Election, v.Client, v.At.Format("15:04:05.000"), v.Term, v.Prior, v.PriorClient)
}

// leadershipTerms checks that each leadership (of one election) has a term
// above every term of the leaderships that began before it (Hold.Start,
// when Campaign returned) and after the last of amnesias before it: a
// majority restarted empty forgot the term counter, and the terms begin
// again from what the others kept (docs/fencing.md: fences need a majority
// that persists), which is no violation of the election's promise. It
// also counts those restarts: leaderships whose term is not above every
// earlier one's, only because an amnesia came between them.
func leadershipTerms(hs []Hold, amnesias []time.Time) ([]TermViolation, int) {
	hs = slices.SortedFunc(slices.Values(hs), func(a, b Hold) int {
		return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.Fence, b.Fence))
	})
	amnesias = slices.SortedFunc(slices.Values(amnesias), time.Time.Compare)
	var out []TermViolation
	var top *Hold      // the greatest term so far since the last amnesia
	var highest uint64 // the greatest term of the run so far
	restarts := 0
	for i, h := range hs {
		for len(amnesias) > 0 && !amnesias[0].After(h.Start) {
			top, amnesias = nil, amnesias[1:] // a new epoch of terms
		}
		if top == nil && h.Fence <= highest {
			restarts++
		}
		highest = max(highest, h.Fence)
		if top != nil && h.Fence <= top.Fence {
			out = append(out, TermViolation{Where: "leadership", Election: h.Key, Client: h.Client, Term: h.Fence, At: h.Start,
				PriorClient: top.Client, Prior: top.Fence})
		}
		if top == nil || h.Fence > top.Fence {
			top = &hs[i]
		}
	}
	return out, restarts
}

// observedTerms checks that no Observe stream received a term below one it
// had received before; the zero Leader of a lapse has no term, and is not
// judged.
func observedTerms(os []Observation) []TermViolation {
	var out []TermViolation
	type stream struct {
		election string
		id       int
	}
	top := make(map[stream]uint64)
	for _, o := range os {
		if o.Term == 0 {
			continue
		}
		s := stream{o.Election, o.Stream}
		if o.Term < top[s] {
			out = append(out, TermViolation{Where: "observer", Election: o.Election, Client: o.Stream, Term: o.Term, At: o.At, Prior: top[s]})
		}
		top[s] = max(top[s], o.Term)
	}
	return out
}

package sim

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/redlockgo/redlock/internal/keyspace"
)

// violation is one broken safety property, with the key it concerns.
type violation struct {
	key  string
	what string
}

// check reads a run's holds, key by key (an election's name is its key):
//
//   - no two holds in conflict whose windows overlap: two exclusive holds,
//     an exclusive hold and a reader, two leaders (holds of one group are
//     one holder and never conflict);
//   - never more permits of a key at once than its limit (limits);
//   - fences and terms: a hold in conflict with an earlier one has a
//     greater fence, and every fenced hold has a greater fence than each
//     one whose call returned before its own call began (readers and
//     permits that overlap may share one), except within an owner's holds,
//     which share the owner's fence.
func check(holds []hold, limits map[string]int) []violation {
	byKey := map[string][]hold{}
	for _, h := range holds {
		for _, k := range h.keys {
			byKey[k] = append(byKey[k], h)
		}
	}
	var out []violation
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		hs := byKey[key]
		slices.SortFunc(hs, func(a, b hold) int { return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.n, b.n)) })
		out = append(out, overlaps(key, hs)...)
		if limit, ok := limits[key]; ok {
			out = append(out, overLimit(key, hs, limit)...)
		}
		out = append(out, fences(key, hs)...)
	}
	return out
}

// live reports whether h held anything: an empty window did not.
func (h hold) live() bool { return h.to > h.from }

// conflict reports whether a and b may not hold one key at once.
func conflict(a, b hold) bool {
	switch {
	case a.group != "" && a.group == b.group:
		return false
	case a.kind == permit || b.kind == permit: // counted by overLimit
		return false
	case a.kind == reader && b.kind == reader:
		return false
	}
	return true
}

// overlaps finds the holds of key, sorted by start, that conflict while
// their windows overlap.
func overlaps(key string, hs []hold) []violation {
	var out []violation
	for i, a := range hs {
		if !a.live() {
			continue
		}
		for _, b := range hs[i+1:] {
			if b.from >= a.to {
				break
			}
			if b.live() && conflict(a, b) {
				what := "two holders at once"
				if a.kind == leader {
					what = "two leaders at once"
				}
				out = append(out, violation{key, fmt.Sprintf("%s: %v and %v", what, a, b)})
			}
		}
	}
	return out
}

// overLimit finds the instants at which more permits of key were held than
// its limit.
func overLimit(key string, hs []hold, limit int) []violation {
	var out []violation
	var held []hold
	for _, h := range hs {
		if h.kind != permit || !h.live() {
			continue
		}
		held = slices.DeleteFunc(held, func(o hold) bool { return o.to <= h.from })
		held = append(held, h)
		if len(held) > limit {
			names := make([]string, len(held))
			for i, o := range held {
				names[i] = o.String()
			}
			out = append(out, violation{key, fmt.Sprintf("%d permits at once, limit %d: %s", len(held), limit, strings.Join(names, ", "))})
		}
	}
	return out
}

// fences checks the fences (terms) of key's holds, sorted by start.
func fences(key string, hs []hold) []violation {
	var out []violation
	for i, a := range hs {
		if a.fence == 0 {
			continue
		}
		for _, b := range hs[i+1:] {
			if b.fence == 0 || b.fence > a.fence || strings.HasPrefix(a.group, "owner") && a.group == b.group {
				continue
			}
			switch {
			case a.live() && b.live() && conflict(a, b) && a.to <= b.from:
				out = append(out, violation{key, fmt.Sprintf("fence did not increase: %v after %v", b, a)})
			case a.from < b.called:
				out = append(out, violation{key, fmt.Sprintf("fence not above one returned before the call began: %v after %v", b, a)})
			}
		}
	}
	return out
}

// lasting reports whether a key without a TTL at the end of a run is one
// the documentation says lives on (keyspace.Lasting: fence counters, the
// fresh-start declarations, the recorded max TTL).
func lasting(key string) bool { return keyspace.Lasting(key) }

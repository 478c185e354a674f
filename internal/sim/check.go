package sim

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
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
//   - fences: a hold in conflict with an earlier one has a greater fence.
//
// Permits are not checked yet.
func check(holds []hold) []violation {
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
	case a.kind == permit || b.kind == permit: // not checked yet
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

// fences checks the fences (terms) of key's holds, sorted by start.
func fences(key string, hs []hold) []violation {
	var out []violation
	for i, a := range hs {
		if a.fence == 0 {
			continue
		}
		for _, b := range hs[i+1:] {
			if b.fence == 0 || b.fence > a.fence {
				continue
			}
			if a.live() && b.live() && conflict(a, b) && a.to <= b.from {
				out = append(out, violation{key, fmt.Sprintf("fence did not increase: %v after %v", b, a)})
			}
		}
	}
	return out
}

// lasting reports whether a key without a TTL at the end of a run is one
// the documentation says lives on: a fence counter (K:fence, docs/fencing.md)
// or one of the library's node markers (redlock:..., docs/safety.md).
func lasting(key string) bool {
	return strings.HasSuffix(key, ":fence") || strings.HasPrefix(key, "redlock:")
}

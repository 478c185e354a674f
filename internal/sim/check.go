package sim

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// violation is one broken safety property, with the key it concerns.
type violation struct {
	key  string
	what string
}

// check reads a run's holds: no two holders of one key whose windows
// overlap, and fences that strictly increase from one holder to the next.
func check(holds []hold) []violation {
	byKey := map[string][]hold{}
	for _, h := range holds {
		if h.to > h.from { // an empty window held nothing
			byKey[h.key] = append(byKey[h.key], h)
		}
	}
	var out []violation
	for _, key := range slices.Sorted(mapsKeys(byKey)) {
		hs := byKey[key]
		slices.SortFunc(hs, func(a, b hold) int { return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.n, b.n)) })
		for i, a := range hs {
			for _, b := range hs[i+1:] {
				if b.from >= a.to {
					break
				}
				out = append(out, violation{key, fmt.Sprintf("two holders at once: %v and %v", a, b)})
			}
		}
		var last *hold
		for i := range hs {
			h := &hs[i]
			if h.fence == 0 {
				continue
			}
			if last != nil && h.fence <= last.fence {
				out = append(out, violation{key, fmt.Sprintf("fence did not increase: %v after %v", h, last)})
			}
			last = h
		}
	}
	return out
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// lasting reports whether a key without a TTL at the end of a run is one
// the documentation says lives on: a fence counter (K:fence, docs/fencing.md)
// or one of the library's node markers (redlock:..., docs/safety.md).
func lasting(key string) bool {
	return strings.HasSuffix(key, ":fence") || strings.HasPrefix(key, "redlock:")
}

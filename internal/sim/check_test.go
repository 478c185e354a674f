package sim

import (
	"strings"
	"testing"
	"time"
)

// The checker flags each broken property, and only those: one table row
// per property, with a history that breaks it and one that does not.
func TestCheckFlagsEachKindOfConflict(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	h := func(k kind, key string, from, to int) hold {
		return hold{kind: k, keys: []string{key}, called: ms(from - 1), from: ms(from), to: ms(to)}
	}
	fenced := func(hd hold, fence uint64) hold { hd.fence = fence; return hd }
	grouped := func(hd hold, g string) hold { hd.group = g; return hd }
	called := func(hd hold, at int) hold { hd.called = ms(at); return hd }
	multi := hold{kind: exclusive, keys: []string{"a", "b"}, called: ms(9), from: ms(10), to: ms(20)}
	for _, tc := range []struct {
		name  string
		holds []hold
		want  string // a part of the violation, "" for none
	}{
		{"exclusive overlap", []hold{h(exclusive, "a", 0, 10), h(exclusive, "a", 5, 15)}, "two holders at once"},
		{"exclusive in turn", []hold{h(exclusive, "a", 0, 10), h(exclusive, "a", 10, 15)}, ""},
		{"writer and reader", []hold{h(reader, "a", 0, 10), h(exclusive, "a", 9, 15)}, "two holders at once"},
		{"readers share", []hold{h(reader, "a", 0, 10), h(reader, "a", 5, 15)}, ""},
		{"multi-lock and lock", []hold{multi, h(exclusive, "b", 15, 30)}, "two holders at once"},
		{"multi-lock and another key", []hold{multi, h(exclusive, "c", 15, 30)}, ""},
		{"two leaders", []hold{h(leader, "e", 0, 10), h(leader, "e", 5, 15)}, "two leaders at once"},
		{"one token's handles", []hold{grouped(h(exclusive, "a", 0, 10), "g"), grouped(h(exclusive, "a", 5, 15), "g")}, ""},
		{"permits at the limit", []hold{h(permit, "p", 0, 10), h(permit, "p", 5, 15), h(permit, "p", 10, 20)}, ""},
		{"permits over the limit", []hold{h(permit, "p", 0, 10), h(permit, "p", 5, 15), h(permit, "p", 9, 20)}, "3 permits at once, limit 2"},
		{"fences rise", []hold{fenced(h(exclusive, "a", 0, 10), 1), fenced(h(exclusive, "a", 10, 15), 2)}, ""},
		{"fence falls", []hold{fenced(h(exclusive, "a", 0, 10), 2), fenced(h(exclusive, "a", 10, 15), 2)}, "fence did not increase"},
		{"terms fall", []hold{fenced(h(leader, "e", 0, 10), 3), fenced(h(leader, "e", 12, 15), 1)}, "fence did not increase"},
		{"overlapping readers share a fence", []hold{fenced(h(reader, "a", 0, 10), 1), fenced(called(h(reader, "a", 5, 15), 0), 1)}, ""},
		{"a later reader shares a fence", []hold{fenced(h(reader, "a", 0, 10), 1), fenced(h(reader, "a", 5, 15), 1)}, "returned before the call began"},
		{"a later permit shares a fence", []hold{fenced(h(permit, "p", 0, 10), 1), fenced(h(permit, "p", 5, 15), 1)}, "returned before the call began"},
		{"an owner's holds share a fence", []hold{fenced(grouped(h(exclusive, "a", 0, 10), "owner x"), 1), fenced(grouped(h(exclusive, "a", 5, 15), "owner x"), 1)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.holds {
				tc.holds[i].n = i + 1
			}
			vs := check(tc.holds, map[string]int{"p": 2})
			switch {
			case tc.want == "" && len(vs) > 0:
				t.Errorf("flagged %v", vs)
			case tc.want != "" && (len(vs) == 0 || !strings.Contains(vs[0].what, tc.want)):
				t.Errorf("got %v, want %q", vs, tc.want)
			}
		})
	}
}

package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/redlockgo/redlock/redlock"
)

// The kinds of redlock.KeyStatus.Kind that are locks of this package; any
// other non-empty kind is the Redis type of a key of the application's.
const (
	kindLock    = "lock"    // an exclusive lock, a writer, a multi-lock's key
	kindReaders = "readers" // shared read holds
	kindPermits = "permits" // a semaphore's permits
)

// keyView is the CLI's reading of a redlock.KeyStatus: the library decides
// what the key holds and whether it is held (Kind, Held, Token, Holders);
// the CLI also tells the nodes that did not answer at all from those that
// answered with an error, and counts what the other nodes hold.
type keyView struct {
	redlock.KeyStatus
	unreachable int            // nodes that did not answer
	refused     int            // nodes that refused the credentials (NOAUTH, WRONGPASS, NOPERM)
	quarantined int            // nodes that answered but do not count: the restart quarantine
	failed      int            // nodes that did not answer, or answered with an error
	present     int            // nodes that have the key, of any kind
	tokens      int            // distinct lock tokens
	kinds       map[string]int // nodes per kind, "" (free) left out
}

func newKeyView(st redlock.KeyStatus) keyView {
	v := keyView{KeyStatus: st, kinds: map[string]int{}}
	tokens := map[string]bool{}
	for _, n := range st.Nodes {
		if n.Err != nil {
			v.failed++
			if unreachable(n.Err) {
				v.unreachable++
			} else if loginRefused(n.Err) != "" {
				v.refused++
			}
			continue
		}
		if n.Quarantined > 0 {
			v.quarantined++
		}
		if n.Kind != "" {
			v.present++
			v.kinds[n.Kind]++
			if n.Kind == kindLock {
				tokens[n.Token] = true
			}
		}
	}
	v.tokens = len(tokens)
	return v
}

// verdict is what status concludes about a key.
type verdict int

const (
	// held: a lock by one token on a majority of the nodes, or readers or
	// permits with a live hold on each of a majority.
	held verdict = iota
	// free: no node that answered has the key, and those that did not
	// answer are too few to hold a lock.
	free
	// neither: the key is on some nodes but not held on a majority, or
	// it is a key of another type, or too many nodes answered with errors
	// to tell.
	neither
	// unavailable: a majority of the nodes did not answer, refused the
	// credentials, or do not count (the restart quarantine).
	unavailable
)

// counting is how many nodes could be part of a majority now: those that
// answered and are not quarantined.
func (v keyView) counting() int { return v.Total - v.unreachable - v.refused - v.quarantined }

// verdict decides from the view.
func (v keyView) verdict() verdict {
	switch {
	case v.Held:
		return held
	case v.counting() < v.Needed:
		return unavailable
	case v.present == 0 && v.failed < v.Needed:
		return free
	default:
		return neither
	}
}

// header is the first line: the key, named by its kind, and what holding
// it takes.
func (v keyView) header() string {
	switch v.Kind {
	case "", kindLock:
		return fmt.Sprintf("lock %q on %d nodes (a lock needs %d)", v.Key, v.Total, v.Needed)
	case kindReaders, kindPermits:
		return fmt.Sprintf("%s %q on %d nodes (held while %d have a live %s)", v.Kind, v.Key, v.Total, v.Needed, singular(v.Kind))
	default:
		return fmt.Sprintf("key %q on %d nodes (a Redis %s: not a lock, readers or permits)", v.Key, v.Total, v.Kind)
	}
}

// singular is "reader" for "readers", "permit" for "permits".
func singular(kind string) string { return strings.TrimSuffix(kind, "s") }

// leases says how many live readers or permits (v.Kind) each node that
// answered has: "readers: 2 on each of 3 nodes", or "permits: 2 on node 0,
// 1 on node 1, 0 on node 2".
func (v keyView) leases() string {
	var counts []int
	var parts []string
	for _, n := range v.Nodes {
		if n.Err != nil {
			continue
		}
		c := 0
		if n.Kind == v.Kind {
			c = n.Leases
		}
		counts = append(counts, c)
		parts = append(parts, fmt.Sprintf("%d on node %d", c, n.Node))
	}
	switch {
	case len(counts) > 1 && allEqual(counts) && len(counts) == v.Total:
		return fmt.Sprintf("%s: %d on each of %d nodes", v.Kind, counts[0], len(counts))
	case len(counts) > 1 && allEqual(counts):
		return fmt.Sprintf("%s: %d on each of the %d nodes that answered", v.Kind, counts[0], len(counts))
	default:
		return v.Kind + ": " + strings.Join(parts, ", ")
	}
}

func allEqual(s []int) bool {
	for _, x := range s {
		if x != s[0] {
			return false
		}
	}
	return true
}

// summary is the verdict in one line, naming the kind. A lock's lines are
// those of the CLI before it told the kinds apart: scripts match them.
func (v keyView) summary(vd verdict) string {
	var s string
	switch {
	case vd == held && v.Kind == kindLock:
		s = fmt.Sprintf("summary: held on %d of %d nodes (%d needed)", v.Holders, v.Total, v.Needed)
	case vd == held:
		s = fmt.Sprintf("summary: held by %s on %d of %d nodes (%d needed)", v.Kind, v.Holders, v.Total, v.Needed)
	case vd == free:
		s = "summary: free"
	case vd == unavailable && v.refused+v.quarantined == 0:
		s = fmt.Sprintf("summary: unknown: %d of %d nodes answered, %d needed", v.Total-v.unreachable, v.Total, v.Needed)
	case vd == unavailable:
		s = fmt.Sprintf("summary: unavailable: %d of %d nodes count now, %d needed (%s)", v.counting(), v.Total, v.Needed, v.outOfCount())
	case v.present == 0:
		s = fmt.Sprintf("summary: not known: the key is on none of the nodes that answered, but %d of %d answered with an error (%d needed)",
			v.failed-v.unreachable, v.Total, v.Needed)
	case v.Kind == kindLock:
		s = fmt.Sprintf("summary: not held: the key is on %d of %d nodes, but no token on a majority (%d needed)",
			v.present, v.Total, v.Needed)
	case v.Kind == kindReaders || v.Kind == kindPermits:
		s = fmt.Sprintf("summary: not held: a live %s on %d of %d nodes, not a majority (%d needed)",
			singular(v.Kind), v.Holders, v.Total, v.Needed)
	default:
		s = fmt.Sprintf("summary: not held: the key is a Redis %s on %d of %d nodes, not a lock, readers or permits",
			v.Kind, v.kinds[v.Kind], v.Total)
	}
	if v.tokens > 1 {
		s += fmt.Sprintf("; %d different tokens", v.tokens)
	}
	if v.Reserved > 0 {
		s += fmt.Sprintf("; reserved for a waiting LockAll on %d %s", v.Reserved, plural(v.Reserved, "node"))
	}
	s += v.otherKinds()
	if v.unreachable > 0 && vd != unavailable {
		s += fmt.Sprintf("; %d unreachable", v.unreachable)
	}
	return s
}

// otherKinds names the kinds the key holds on the nodes that disagree with
// v.Kind: "; also permits on 1 node", in the order of the kinds' names.
func (v keyView) otherKinds() string {
	var names []string
	for k := range v.kinds {
		if k != v.Kind {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var s string
	for _, k := range names {
		s += fmt.Sprintf("; also %s on %d %s", kindName(k), v.kinds[k], plural(v.kinds[k], "node"))
	}
	return s
}

// kindName names a kind in a sentence: "a lock", "readers", "permits",
// "a Redis list".
func kindName(kind string) string {
	switch kind {
	case kindLock:
		return "a lock"
	case kindReaders, kindPermits:
		return kind
	default:
		return "a Redis " + kind
	}
}

func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// outOfCount says why the nodes that do not count are out: "2 quarantined
// after a restart, 1 unreachable".
func (v keyView) outOfCount() string {
	var parts []string
	if v.quarantined > 0 {
		parts = append(parts, fmt.Sprintf("%d quarantined after a restart", v.quarantined))
	}
	if v.refused > 0 {
		parts = append(parts, fmt.Sprintf("%d refused the credentials", v.refused))
	}
	if v.unreachable > 0 {
		parts = append(parts, fmt.Sprintf("%d unreachable", v.unreachable))
	}
	if n := v.failed - v.unreachable - v.refused; n > 0 {
		parts = append(parts, fmt.Sprintf("%d failing", n))
	}
	return strings.Join(parts, ", ")
}

package sim

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redlockgo/redlock/redlock"
)

// event is one line of a run's history: a call's start or its return, with
// what the caller saw.
type event struct {
	at     time.Duration // virtual time since the run's start
	client int
	seq    int // the client's count of events, a tie-break at one instant
	key    string
	what   string
}

func (e event) String() string {
	if e.client < 0 { // a trace line
		return fmt.Sprintf("%12.6fs        | %s", e.at.Seconds(), e.what)
	}
	return fmt.Sprintf("%12.6fs c%d %-4s %s", e.at.Seconds(), e.client, e.key, e.what)
}

// kind is what a hold excludes: an exclusive hold (a lock, a multi-lock,
// an owner's hold) every other hold of its keys, a reader only exclusive
// holds, a permit only the permits over its key's limit, a leader every
// other leader of its election.
type kind int

const (
	exclusive kind = iota
	reader
	permit
	leader
)

func (k kind) String() string { return [...]string{"holder", "reader", "permit", "leader"}[k] }

// hold is one holder's validity, as the checker judges it: from the
// moment its lock call returned (or its Do's fn started) to the moment it
// stopped acting as the holder, cut at its own Until() (the Client's word
// for when the lock stops being safe to use).
type hold struct {
	client int
	n      int // the holder's number in the run
	kind   kind
	keys   []string // one key, a multi-lock's keys, or an election's name
	// group names the holds that are one holder: the handles of one token
	// (Resume) or one owner's holds (WithOwner). "" is a group of one.
	group    string
	called   time.Duration // when the call that took it began
	from, to time.Duration
	fence    uint64 // the fence (0 without WithFencing), or a leader's term (0 for Lead)
}

func (h hold) String() string {
	s := fmt.Sprintf("%v #%d (c%d) of %s over [%.6fs, %.6fs)", h.kind, h.n, h.client, strings.Join(h.keys, "+"), h.from.Seconds(), h.to.Seconds())
	if h.group != "" {
		s += " of " + h.group
	}
	if h.fence != 0 {
		s += fmt.Sprintf(" %s %d", map[bool]string{false: "fence", true: "term"}[h.kind == leader], h.fence)
	}
	return s
}

// history is a run's record, appended to by every worker.
type history struct {
	start time.Time

	mu     sync.Mutex
	events []event
	holds  []hold
	seqs   map[int]int
	ops    int
	// flagged is what a worker saw break at the moment it happened (a
	// loss reported after Until, a resumed fence not above the hold's).
	flagged []violation

	trace func(at time.Duration, line string) // the network's trace, if on
}

// note records an event of client c on key.
func (h *history) note(c int, key, format string, args ...any) {
	at := time.Since(h.start)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seqs[c]++
	h.events = append(h.events, event{at: at, client: c, seq: h.seqs[c], key: key, what: fmt.Sprintf(format, args...)})
}

// call records a call's start, and counts it as an operation.
func (h *history) call(c int, key, format string, args ...any) {
	h.mu.Lock()
	h.ops++
	h.mu.Unlock()
	h.note(c, key, "> "+format, args...)
}

// tracef tells the trace, if on, of a line outside the history (a
// lock's token: random, so not in the digest).
func (h *history) tracef(format string, args ...any) {
	if h.trace != nil {
		h.trace(time.Since(h.start), fmt.Sprintf(format, args...))
	}
}

// held records a holder's validity window.
func (h *history) held(hd hold) {
	h.mu.Lock()
	defer h.mu.Unlock()
	hd.n = len(h.holds) + 1
	h.holds = append(h.holds, hd)
}

// flag records a violation a worker saw.
func (h *history) flag(key, format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.flagged = append(h.flagged, violation{key, fmt.Sprintf(format, args...)})
}

// counts names how many live holds of each kind the run made.
func (h *history) counts() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := map[kind]int{}
	for _, hd := range h.holds {
		if hd.live() {
			n[hd.kind]++
		}
	}
	return fmt.Sprintf("%d holders, %d readers, %d permits, %d leaders", n[exclusive], n[reader], n[permit], n[leader])
}

// since is a time on the virtual clock as a duration since the run's start.
func (h *history) since(t time.Time) time.Duration { return t.Sub(h.start) }

// sorted returns the events in the order of the virtual clock, ties broken
// by client and the client's own order: an order that does not depend on
// which goroutine appended first.
func (h *history) sorted() []event {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := slices.Clone(h.events)
	slices.SortFunc(out, func(a, b event) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		if a.client != b.client {
			return a.client - b.client
		}
		return a.seq - b.seq
	})
	return out
}

// digest is the SHA-256 of the sorted history: equal for two runs of one
// seed when the runs are the same.
func digest(events []event) string {
	s := sha256.New()
	for _, e := range events {
		fmt.Fprintf(s, "%d %d %s %s\n", e.at, e.client, e.key, e.what)
	}
	return hex.EncodeToString(s.Sum(nil))[:16]
}

// of returns the events on key (a multi-lock's events are on each of
// its keys), for a violation's report.
func of(events []event, key string) []event {
	var out []event
	for _, e := range events {
		if slices.Contains(strings.Split(e.key, "+"), key) {
			out = append(out, e)
		}
	}
	return out
}

// class names an error by its sentinel, without the details (node
// addresses, times) that vary in wording.
func class(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, redlock.ErrLockLost):
		return "lost"
	case errors.Is(err, redlock.ErrNotObtained):
		return "not-obtained"
	case errors.Is(err, redlock.ErrNotExtended):
		return "not-extended"
	case errors.Is(err, redlock.ErrNotReleased):
		return "not-released"
	case errors.Is(err, redlock.ErrNotHeld):
		return "not-held"
	case errors.Is(err, redlock.ErrClosed):
		return "closed"
	case errors.Is(err, redlock.ErrNoLeader):
		return "no-leader"
	case errors.Is(err, redlock.ErrNotProclaimed):
		return "not-proclaimed"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "ctx"
	}
	return "error: " + strings.SplitN(err.Error(), ":", 3)[0]
}

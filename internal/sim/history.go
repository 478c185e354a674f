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

// hold is one holder's validity, as the checker judges it: from the
// moment its lock call returned (or its Do's fn started) to the moment it
// stopped acting as the holder, cut at its own Until() (the Client's word
// for when the lock stops being safe to use).
type hold struct {
	client   int
	n        int // the holder's number in the run
	key      string
	from, to time.Duration
	fence    uint64 // 0 without WithFencing
}

func (h hold) String() string {
	s := fmt.Sprintf("holder #%d (c%d) of %s over [%.6fs, %.6fs)", h.n, h.client, h.key, h.from.Seconds(), h.to.Seconds())
	if h.fence != 0 {
		s += fmt.Sprintf(" fence %d", h.fence)
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

// of returns the events on key, for a violation's report.
func of(events []event, key string) []event {
	var out []event
	for _, e := range events {
		if e.key == key {
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
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "ctx"
	}
	return "error: " + strings.SplitN(err.Error(), ":", 3)[0]
}

package chaos

import (
	"sync"
	"time"
)

// Hold is one client's tenure of a lock as that client saw it, on the host's
// monotonic clock (every client of a run lives in one process, so their
// readings compare).
type Hold struct {
	// Key is the lock's key; Client identifies the client that held it.
	Key    string
	Client int
	// Begin is when the Lock call began; Start when it returned the lock.
	Begin, Start time.Time
	// End is when the client stopped relying on the lock: the earlier of the
	// moment it began to release it and the lock's Until().
	End time.Time
	// Fence is the lock's fencing token; 0 without fencing.
	Fence uint64
	// Workload is the workload the hold belongs to (Exclusive when unset).
	Workload Workload
	// Shared marks a reader's hold (RLock): readers of a key may overlap
	// one another, never a writer.
	Shared bool
	// Limit is a permit's limit (AcquirePermit): up to Limit holds of the
	// key may overlap; 0 for every other hold, which must overlap none.
	Limit int
}

// Outcome is what became of a write to a counter.
type Outcome int

// Outcomes of a write.
const (
	// Committed: the store acknowledged the write.
	Committed Outcome = iota
	// Rejected: the fenced store refused a stale fence; nothing changed.
	Rejected
	// Unknown: the call failed; the write may or may not have landed.
	Unknown
)

// String names the outcome.
func (o Outcome) String() string {
	switch o {
	case Committed:
		return "committed"
	case Rejected:
		return "rejected"
	case Unknown:
		return "unknown"
	}
	return "Outcome(?)"
}

// Write is one write of an increment to a key's counter, made under a hold.
type Write struct {
	Key    string
	Client int
	// Fence is the fence the write carried; 0 without fencing.
	Fence uint64
	// Sent is when the write was sent, Done when its answer arrived.
	Sent, Done time.Time
	Outcome    Outcome
	// Workload is the workload of the hold the write was made under.
	Workload Workload
}

// History is everything a run observed: every hold, every write, and the
// counters' final values read from the store after the run.
type History struct {
	Holds  []Hold
	Writes []Write
	// Final is each key's counter at the end; a key missing from it is 0.
	Final map[string]int64
	// Observations are what the election's Observe streams received, in
	// the order each stream received them.
	Observations []Observation
	// Amnesias are the moments a majority of the nodes, none persisting,
	// was killed, to restart empty (the amnesia rounds). A fence needs a
	// majority that keeps its counter (docs/fencing.md): the election's
	// terms are judged between these moments, not across them.
	Amnesias []time.Time
}

// recorder collects a History from concurrent workers.
type recorder struct {
	mu     sync.Mutex
	holds  []Hold
	writes []Write
	seen   []Observation
}

func (r *recorder) observe(o Observation) {
	r.mu.Lock()
	r.seen = append(r.seen, o)
	r.mu.Unlock()
}

func (r *recorder) hold(h Hold) {
	r.mu.Lock()
	r.holds = append(r.holds, h)
	r.mu.Unlock()
}

func (r *recorder) write(w Write) {
	r.mu.Lock()
	r.writes = append(r.writes, w)
	r.mu.Unlock()
}

// history returns what was recorded, with the final counters.
func (r *recorder) history(final map[string]int64) History {
	r.mu.Lock()
	defer r.mu.Unlock()
	return History{
		Holds:  append([]Hold(nil), r.holds...),
		Writes: append([]Write(nil), r.writes...),
		Final:  final,

		Observations: append([]Observation(nil), r.seen...),
	}
}

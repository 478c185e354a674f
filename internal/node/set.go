// Package node is what a Client knows of each of its Redis nodes, decided
// once when the Client is built: the node's Pool, its key naming
// (standalone or Redis Cluster companions), its health checks (restart
// quarantine, clock check), the order of the Client's calls on it and its
// silence. No call asks again: a call site takes a node's Names, runs its
// Health, takes its place in the Order, and notes its outcome.
//
// The package sits below the lock engine and imports nothing of it; what
// it reports goes up through the Reporter it is given.
//
//	s := node.New(pools, node.Config{Clock: clock.Real{}, Report: report, Timeout: time.Second})
//	keys := s.Names(i).Queue(key)
//	slots := s.TakeAll(key, token, true, nil)
//	ok, err := slots[i].Run(ctx, call)
//	s.Note(i, err)
//	if ok && err == nil { err = s.Health(ctx, i, key) }
package node

import (
	"slices"
	"time"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/pool"
)

// Config is what a Set is built with. Its zero value is not usable: Clock
// and Report are required.
type Config struct {
	// Quarantine is how long a node that restarted without persisting
	// every write, or a Redis Cluster shard master that took over or
	// restarted, stays out (0: both checks are off).
	Quarantine time.Duration
	// MaxTTL is the Client's longest TTL, which its scripts record on the
	// nodes; a larger recorded one lengthens the quarantine (bound.go).
	MaxTTL time.Duration
	// BoundCap is the longest TTL any Client may record: a node younger
	// than it (and its drift allowance) counts only once the recorded
	// bound was read after the Set first saw its run (0: no read).
	BoundCap time.Duration
	// ClockEvery is the interval of the clock readings (0: off).
	ClockEvery time.Duration
	// ClockHold is how long a node stays out after a clock fault.
	ClockHold time.Duration
	// DriftFactor is the clock drift allowed, as a fraction of the time.
	DriftFactor float64
	// Timeout bounds each clock reading and each read of a horizon probe.
	Timeout time.Duration
	// Settle is how long after a node's restart every vote that a lease
	// counting the node's earlier grants may count has landed: the longest
	// node timeout of the nodes' clients (horizon.go).
	Settle time.Duration
	// Clock is the Client's clock.
	Clock clock.Clock
	// Report receives what the health checks find.
	Report Reporter
	// Refusal reports whether an error of a node call is the node's answer
	// about the key (held, another kind, a lock-delay) rather than a
	// failure of the node: its State stays OK (nil: every error fails).
	Refusal func(error) bool
}

// Set is a Client's nodes. It is safe for concurrent use.
type Set struct {
	cfg     Config
	pools   []pool.Pool
	names   []Names
	sameAs  []int // sameAs[i]: the first node with node i's naming
	checks  [][]check
	reads   []bool // reads[i]: node i's checks do I/O (HealthReads)
	quorum  int
	silence silence
	states  []nodeState // each node's State (state.go)
	order   Order
	clocks  *clockWatch // nil without the clock check
	horizon horizons    // restarted nodes' return (horizon.go)
	bound   bounds      // the max TTL recorded on the nodes (bound.go)
}

// New builds the Set of pools: each node's naming from whether its Pool is
// a Redis Cluster (pool.Cluster), and its health checks from cfg. Every
// standalone node tells its server's identity: through its Pool
// (pool.Identifier) while it tells it or, when it does not, through every
// script of the Set's, which reads it in the same round trip (witness.go). An
// identified node gets the same-server check, and the restart quarantine
// when it is on; a Redis Cluster node under the quarantine gets the shard
// check. It does no I/O; StartClocks starts the clock readings.
func New(pools []pool.Pool, cfg Config) *Set {
	n := len(pools)
	s := &Set{
		cfg:     cfg,
		pools:   slices.Clone(pools),
		names:   make([]Names, n),
		sameAs:  make([]int, n),
		checks:  make([][]check, n),
		reads:   make([]bool, n),
		quorum:  n/2 + 1,
		silence: make(silence, n),
		states:  make([]nodeState, n),
	}
	if cfg.ClockEvery > 0 {
		s.clocks = newClockWatch(n, cfg.DriftFactor, cfg.ClockHold)
	}
	s.horizon.init(n)
	same := newServers(n)
	s.bound.init(n)
	for i, p := range s.pools {
		s.names[i] = Names(Standalone{})
		if cp, ok := p.(pool.Cluster); ok && cp.IsCluster() {
			s.names[i] = Cluster{}
		}
		s.sameAs[i] = slices.Index(s.names, s.names[i])
		idr, ok := p.(pool.Identifier)
		if s.names[i] == Names(Standalone{}) {
			w := newWitnessed(p) // every answer comes with the run that gave it
			s.pools[i], idr, ok = w, w, true
		}
		if ok {
			s.checks[i] = append(s.checks[i], same.watch(s, i, idr)) // first: a misconfiguration outranks a node's state
		}
		if ok && cfg.Quarantine > 0 {
			s.checks[i] = append(s.checks[i], &quarantine{id: idr, set: s})
		}
		if s.clocks != nil {
			s.checks[i] = append(s.checks[i], clockCheck{w: s.clocks, set: s})
		}
		if s.names[i] == Names(Cluster{}) && cfg.Quarantine > 0 {
			// Last: its round trip is paid only by a yes the others let count.
			s.checks[i] = append(s.checks[i], &shardCheck{p: p, set: s})
			s.reads[i] = true
		}
	}
	return s
}

// Len returns the number of nodes.
func (s *Set) Len() int { return len(s.pools) }

// Quorum returns the number of nodes a decision needs: Len()/2+1.
func (s *Set) Quorum() int { return s.quorum }

// Pool returns node i's Pool.
func (s *Set) Pool(i int) pool.Pool { return s.pools[i] }

// Pools returns every node's Pool, in node order. The caller must not
// change the slice.
func (s *Set) Pools() []pool.Pool { return s.pools }

// Addr returns node i's address.
func (s *Set) Addr(i int) string { return s.pools[i].Addr() }

// Names returns node i's naming.
func (s *Set) Names(i int) Names { return s.names[i] }

// SameNames returns the first node whose naming is node i's: names built
// for it serve node i too.
func (s *Set) SameNames(i int) int { return s.sameAs[i] }

// Namings returns the namings of the nodes, each once.
func (s *Set) Namings() []Names {
	var out []Names
	for i, n := range s.names {
		if s.sameAs[i] == i {
			out = append(out, n)
		}
	}
	return out
}

// AnyCluster reports whether any node is a Redis Cluster.
func (s *Set) AnyCluster() bool { return slices.Contains(s.names, Names(Cluster{})) }

// All returns 0..Len()-1, in a new slice.
func (s *Set) All() []int {
	nodes := make([]int, len(s.pools))
	for i := range nodes {
		nodes[i] = i
	}
	return nodes
}

// Note records how the latest call to node i ended (err nil: it answered):
// a call cut by the node timeout makes the node silent until it answers,
// and err sets the reach part of the node's State.
func (s *Set) Note(i int, err error) {
	s.silence.note(i, err)
	s.noteReach(i, err)
}

// Silent reports whether the latest call to node i that ended timed out.
func (s *Set) Silent(i int) bool { return s.silence.silent(i) }

// Take takes the places of a call on node i for key and token in the
// Client's order (Order.Take).
func (s *Set) Take(key, token string, write bool, i int) Slot {
	return s.order.Take(key, token, write, i, len(s.pools))
}

// TakeAll takes the places of one call per node of nodes (nil: all), in
// the Client's order (Order.TakeAll).
func (s *Set) TakeAll(key, token string, write bool, nodes []int) []Slot {
	return s.order.TakeAll(key, token, write, nodes, len(s.pools))
}

// TakeKeys takes the places of one write of keys per node of nodes (nil:
// all), in the Client's order (Order.TakeKeys).
func (s *Set) TakeKeys(keys []string, token string, nodes []int) []Slot {
	return s.order.TakeKeys(keys, token, nodes, len(s.pools))
}

// Start starts the Set's background work until stop is closed: the clock
// readings, when the check is on, and the horizon probes of restarted
// nodes (horizon.go), none of which starts before. Stop waits for it to
// end.
func (s *Set) Start(stop <-chan struct{}) {
	s.horizon.mu.Lock()
	s.horizon.stop = stop
	s.horizon.mu.Unlock()
	if s.clocks == nil {
		return
	}
	s.clocks.running.Add(1)
	go s.watchClocks(stop)
}

// Stop waits for the Set's background work to end, once the channel given
// to Start is closed. No horizon probe starts after it.
func (s *Set) Stop() {
	s.clocks.stop()
	// A probe starts under the horizon's mutex (probe): one that began
	// before this has added itself to running, one after finds stopped.
	s.horizon.mu.Lock()
	s.horizon.stopped = true
	s.horizon.mu.Unlock()
	s.horizon.running.Wait()
}

package redlock

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/internal/node"
	"github.com/redlockgo/redlock/pool"
)

// NodeState is what a Client last learned of one node from its answers,
// without asking it: the state in which its next answer is expected.
type NodeState uint8

// Node states. A node is StateSilent or StateFailing after its latest
// call, whatever it said before; when it answers, it is as trusted as its
// latest yes was (StateQuarantined, StateClockSuspect), and StateOK when
// that yes counted. Refusals because a key is held do not change it.
const (
	// StateOK: the node answered, and its latest yes counted.
	StateOK NodeState = iota
	// StateSilent: the latest call was cut by the node timeout
	// (ErrNodeTimeout): blackholed, paused, overloaded.
	StateSilent
	// StateFailing: the latest call failed otherwise: refused connection,
	// network error, a command error such as NOPERM.
	StateFailing
	// StateQuarantined: the latest yes did not count, the node having
	// restarted without its data (or a cluster shard failed over) less
	// than the quarantine ago (WithQuarantine).
	StateQuarantined
	// StateClockSuspect: the latest yes did not count, the node's clock
	// having run fast or jumped (WithClockCheck).
	StateClockSuspect
)

var stateNames = [...]string{"ok", "silent", "failing", "quarantined", "clock_suspect"}

// String returns the state in snake case, as used in logs and metric
// attributes: ok, silent, failing, quarantined or clock_suspect.
func (s NodeState) String() string {
	if int(s) >= len(stateNames) {
		return "unknown"
	}
	return stateNames[s]
}

// NodeHealth is one node's state, as NodeStates reports it.
type NodeHealth struct {
	// Node is the node's index in the pools given to New; Addr its
	// address, without credentials.
	Node int
	Addr string
	// State is what the Client last learned of the node.
	State NodeState
	// Err is what made State (the latest failure, or why the latest yes
	// did not count); nil for StateOK.
	Err error
}

// NodeStates returns the state of every node, in node order, as the
// Client's latest calls found it: no node is asked, and a node no call
// has reached yet is StateOK. It is for metrics and health endpoints
// (redlockotel exports it as a gauge); a nil Client returns nil. The
// state is kept where each answer is judged, with atomic stores only when
// it changes, so keeping it costs the calls nothing.
func (c *Client) NodeStates() []NodeHealth {
	if c == nil {
		return nil
	}
	out := make([]NodeHealth, c.nodes.Len())
	for i := range out {
		s, err := c.nodes.State(i)
		out[i] = NodeHealth{Node: i, Addr: c.nodes.Addr(i), State: NodeState(s), Err: err}
	}
	return out
}

// degradedEvery is the shortest interval between two warnings about one
// node (warnDegraded).
const degradedEvery = time.Minute

// nodeWarnings is what the degraded warnings remember of each node.
type nodeWarnings struct {
	nodes []nodeWarning
	ids   []pool.Identifier // nil where the Pool tells no identity
}

type nodeWarning struct {
	warned  atomic.Uint32 // the NodeState last warned about; StateOK once it recovered
	at      atomic.Int64  // when, in Unix nanoseconds on the Client's clock
	evicted atomic.Bool   // its maxmemory-policy was warned about
}

func newNodeWarnings(pools []pool.Pool) nodeWarnings {
	w := nodeWarnings{nodes: make([]nodeWarning, len(pools)), ids: make([]pool.Identifier, len(pools))}
	for i, p := range pools {
		w.ids[i], _ = p.(pool.Identifier)
	}
	return w
}

// warnNodes runs after an operation succeeded, when the Client has a
// logger (WithLogger): while a majority serves, a node that is out is
// otherwise seen by nobody until one more fails. Each node is warned
// about, at Warn, when its state differs from the one last warned about,
// at most once per degradedEvery ("redlock: node degraded", with its
// index, address, state, cause, and how many nodes are ok of the majority
// needed), and once at Info when it is ok again after a warning; so a
// flapping node logs at most two lines a minute, and a healthy Client
// none. It also warns once per node whose maxmemory-policy lets the
// server evict keys (warnEviction). A healthy node costs two atomic loads;
// nothing is allocated unless a line is logged.
func (c *Client) warnNodes(ctx context.Context) {
	now := c.cfg.clock.Now().UnixNano()
	for i := range c.warns.nodes {
		c.warnEviction(ctx, i)
		w := &c.warns.nodes[i]
		s, cause := c.nodes.State(i)
		warned := NodeState(w.warned.Load())
		switch {
		case NodeState(s) == warned:
		case s == node.StateOK:
			if w.warned.CompareAndSwap(uint32(warned), uint32(StateOK)) {
				c.log(ctx, slog.LevelInfo, "redlock: node ok again", slog.Int("node", i), slog.String("addr", c.nodes.Addr(i)),
					slog.String("was", warned.String()))
			}
		case time.Duration(now-w.at.Load()) >= degradedEvery || w.at.Load() == 0:
			if !w.warned.CompareAndSwap(uint32(warned), uint32(s)) {
				continue // another operation warns
			}
			w.at.Store(now)
			attrs := []slog.Attr{slog.Int("node", i), slog.String("addr", c.nodes.Addr(i)),
				slog.String("state", NodeState(s).String()), slog.Int("ok", c.okNodes()), slog.Int("needed", c.nodes.Quorum())}
			if cause != nil {
				attrs = append(attrs, slog.String("error", cause.Error()))
			}
			c.log(ctx, slog.LevelWarn, "redlock: node degraded", attrs...)
		}
	}
}

// okNodes counts the nodes in StateOK.
func (c *Client) okNodes() int {
	n := 0
	for i := range c.nodes.Len() {
		if s, _ := c.nodes.State(i); s == node.StateOK {
			n++
		}
	}
	return n
}

// warnEviction warns, once per node, when node i's server evicts keys
// under memory pressure (maxmemory-policy other than noeviction, as its
// Pool learned at its latest connection: pool.Identity): such a server
// may drop a lock key before its TTL, and another client then takes a
// lock that is still held. A Pool that tells no identity, or a server
// that hides its CONFIG, is not warned about.
func (c *Client) warnEviction(ctx context.Context, i int) {
	w := &c.warns.nodes[i]
	if c.warns.ids[i] == nil || w.evicted.Load() {
		return
	}
	id, ok := c.warns.ids[i].Identity()
	if !ok || id.MaxMemoryPolicy == "" || id.MaxMemoryPolicy == "noeviction" {
		return
	}
	if w.evicted.CompareAndSwap(false, true) {
		c.log(ctx, slog.LevelWarn, "redlock: node may evict lock keys",
			slog.Int("node", i), slog.String("addr", c.nodes.Addr(i)), slog.String("maxmemory_policy", id.MaxMemoryPolicy),
			slog.String("reason", "under memory pressure the server may drop a lock key before its TTL, and another client then takes a lock still held; set maxmemory-policy noeviction"))
	}
}

// warnFewNodes logs, at New, that a Client over fewer than three nodes
// tolerates no node failure: its majority is every node.
func (c *Client) warnFewNodes() {
	if n := c.nodes.Len(); n < 3 {
		c.log(context.Background(), slog.LevelWarn, "redlock: fewer than three nodes tolerate no node failure",
			slog.Int("nodes", n), slog.Int("needed", c.nodes.Quorum()),
			slog.String("reason", "a lock needs every node: one node down, silent or quarantined stops every acquisition and extension; use three or five independent nodes"))
	}
}

// log logs one line to each WithLogger logger.
func (c *Client) log(ctx context.Context, level slog.Level, msg string, attrs ...slog.Attr) {
	for _, l := range c.cfg.loggers {
		l.LogAttrs(ctx, level, msg, attrs...)
	}
}

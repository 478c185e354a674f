package redlock

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// EventKind says what happened to a lock.
type EventKind int

// Event kinds, in the order of a lock's life.
const (
	// Acquired: Lock, TryLock or Do obtained the lock.
	Acquired EventKind = iota + 1
	// NotObtained: an acquisition gave up (after its retries, or its context ended).
	NotObtained
	// Extended: an extension (manual or automatic) reached a majority.
	Extended
	// ExtendFailed: an extension did not reach a majority.
	ExtendFailed
	// Lost: an auto-extended lock could no longer be guaranteed.
	Lost
	// Released: Unlock reached a majority.
	Released
	// ReleaseFailed: Unlock did not reach a majority.
	ReleaseFailed
	// NodeQuarantined: a node restarted without persisting every write and
	// does not count until its quarantine ends (WithQuarantine). Reported
	// once per run of the node; Err is a *NodeError wrapping
	// ErrNodeQuarantined, Key is empty.
	NodeQuarantined
	// NodeUnverified: the Client cannot read a node's age (INFO hidden),
	// so the quarantine cannot apply to it; the node counts. Reported once
	// per run of the node; Err is a *NodeError wrapping ErrNodeUnverified,
	// Key is empty. A Pool that does not tell its node's identity at all
	// (no pool.Identifier) is not an event: New logs it (WithLogger) and
	// NodeStatus.Unverified shows it.
	NodeUnverified
	// NodeClockFault: a node's clock advanced faster than the drift
	// allowance permits (WithClockCheck); it does not count for a while.
	// Err is a *NodeError wrapping ErrNodeClock that states the measured
	// rate; Key is empty.
	NodeClockFault
	// NodeReturned: a node that restarted without its data counts again
	// before its quarantine's end, every lease it could have forgotten
	// having expired: its horizon, the largest lease ceiling a quorum of
	// its peers reported, has passed since its restart (docs/safety.md).
	// The Client that established it declared the node's run fresh on the
	// node, so every Client counts it from then on. Reported once per run
	// by each Client that learns it; Duration is the run's age when it
	// counted again, Addr the node's, Err nil.
	NodeReturned
	// NodeSameServer: a node is the same Redis server as another node of
	// the Client, under another address (both pools learned the same
	// run_id), so neither counts (ErrNodeSameServer). Reported once per
	// run of the node; Err is a *NodeError wrapping ErrNodeSameServer that
	// names both addresses and the run, Addr the node's, Key is empty.
	NodeSameServer
)

var kindNames = [...]string{"", "acquired", "not_obtained", "extended", "extend_failed", "lost", "released", "release_failed",
	"node_quarantined", "node_unverified", "node_clock_fault", "node_returned",
	"node_same_server"}

// String returns the kind in snake case, as used in logs and metric labels.
func (k EventKind) String() string {
	if k <= 0 || int(k) >= len(kindNames) {
		return "unknown"
	}
	return kindNames[k]
}

// Event describes one outcome of an operation on a lock.
type Event struct {
	Kind EventKind
	// Key is the lock's key; for a multi-lock (LockAll), the first of its
	// sorted keys.
	Key string
	// Start is when the operation began; Duration how long it took. For
	// Acquired and NotObtained that is the whole wait, retries included;
	// for Released and Lost, Held is the time since acquisition.
	Start    time.Time
	Duration time.Duration
	Held     time.Duration
	// Attempts counts acquisition attempts (Acquired, NotObtained).
	Attempts int
	// Fence is the lock's fencing token, 0 without WithFencing.
	Fence uint64
	// Addr is the node's address for the events about one node
	// (NodeQuarantined, NodeUnverified, NodeClockFault, NodeReturned,
	// NodeSameServer), "" for the others.
	Addr string
	// Err is the operation's error, with per-node detail (*QuorumError,
	// *NodeError) for the failures; nil for successes.
	Err error
}

// Observer receives an Event after each operation. Observe is called
// synchronously on the operation's goroutine (the keeper's, for automatic
// extensions and loss): it must be quick and safe for concurrent use.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// ObserverFunc adapts a function to an Observer.
type ObserverFunc func(ctx context.Context, e Event)

// Observe calls f.
func (f ObserverFunc) Observe(ctx context.Context, e Event) { f(ctx, e) }

// WithObserver adds an Observer to the Client. Several may be added; each
// sees every event. See the redlockotel module for OpenTelemetry metrics and
// spans, and WithLogger for structured logs.
func WithObserver(o Observer) Option {
	return func(c *config) {
		if o == nil {
			c.fail("nil observer")
			return
		}
		c.observers = append(c.observers, o)
	}
}

// WithLogger logs every event to l, at the level of what an operator can
// act on:
//   - Debug: acquired, extended, released; a lock not obtained because
//     others hold it or the caller's context ended.
//   - Info: a node that counts again before its quarantine's end
//     (NodeReturned); a degraded node that is ok again.
//   - Warn: a lock not obtained because nodes failed or validity ran out; a
//     failed extension or release; fewer than three nodes (at New); a node
//     that is another node's server (NodeSameServer), or whose server may
//     evict keys; a node out of the majority (NodeStates), when its state
//     changes, at most once per node per minute.
//   - Error: a lock kept alive was lost.
//
// Credentials and tokens are never logged. The go-redis client logs on its
// own (redis.SetLogger); this package does not change it. See
// docs/ecosystem.md, "Logs with slog".
func WithLogger(l *slog.Logger) Option {
	if l == nil {
		return func(c *config) { c.fail("nil logger") }
	}
	observe := WithObserver(ObserverFunc(func(ctx context.Context, e Event) {
		level := logLevel(e)
		if !l.Enabled(ctx, level) {
			return
		}
		attrs := []slog.Attr{
			slog.String("key", e.Key),
			slog.Duration("duration", e.Duration),
		}
		if e.Attempts > 0 {
			attrs = append(attrs, slog.Int("attempts", e.Attempts))
		}
		if e.Held > 0 {
			attrs = append(attrs, slog.Duration("held", e.Held))
		}
		if e.Addr != "" {
			attrs = append(attrs, slog.String("addr", e.Addr))
		}
		if e.Fence > 0 {
			attrs = append(attrs, slog.Uint64("fence", e.Fence))
		}
		if e.Err != nil {
			attrs = append(attrs, slog.String("error", e.Err.Error()))
		}
		l.LogAttrs(ctx, level, "redlock: "+e.Kind.String(), attrs...)
	}))
	return func(c *config) {
		observe(c)
		c.loggers = append(c.loggers, l)
	}
}

// logLevel is the level WithLogger logs e at.
func logLevel(e Event) slog.Level {
	switch e.Kind {
	case NotObtained:
		if nodesFailed(e.Err) {
			return slog.LevelWarn
		}
		return slog.LevelDebug
	case ExtendFailed, ReleaseFailed, NodeQuarantined, NodeUnverified, NodeClockFault, NodeSameServer:
		return slog.LevelWarn
	case Lost:
		return slog.LevelError
	case NodeReturned:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// nodesFailed reports whether err, the error of an acquisition, comes from
// failing nodes rather than from contention or the caller: a node error
// other than a refusal or a pending answer, or a majority that agreed too
// late. Once the caller's context has ended, a node timeout may be the
// caller's deadline and does not count.
func nodesFailed(err error) bool {
	var qe *QuorumError
	if !errors.As(err, &qe) {
		return !errors.Is(err, ErrClosed) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	if qe.Reason != "" {
		return true
	}
	callerEnded := qe.ctxErr != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	for _, n := range qe.Nodes {
		switch {
		case errors.Is(n.Err, ErrNodeSameServer):
			return true
		case errors.Is(n.Err, ErrTaken), errors.Is(n.Err, ErrPending), errors.Is(n.Err, context.Canceled):
		case callerEnded && errors.Is(n.Err, ErrNodeTimeout):
		default:
			return true
		}
	}
	return false
}

// emit sends e to every observer, and after a success warns the loggers
// about the nodes that are out (warnNodes).
func (c *Client) emit(ctx context.Context, e Event) {
	for _, o := range c.cfg.observers {
		o.Observe(ctx, e)
	}
	if e.Err == nil && len(c.cfg.loggers) > 0 {
		switch e.Kind {
		case Acquired, Extended, Released:
			c.warnNodes(ctx)
		}
	}
}

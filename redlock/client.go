package redlock

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/internal/fanout"
	"github.com/redlockgo/redlock/internal/lease"
	"github.com/redlockgo/redlock/internal/node"
	"github.com/redlockgo/redlock/internal/wait"
	"github.com/redlockgo/redlock/pool"
)

// Client takes locks on a fixed set of independent Redis nodes. It is safe for
// concurrent use; create one per set of nodes and share it.
//
// A Client owns the short-lived goroutines that finish node calls after an
// operation has decided (stragglers, cleanup) and the listeners that hear
// its waiters' grants. Close ends them. The pools stay the caller's: Close
// does not close them.
type Client struct {
	nodes  *node.Set // the nodes: pools, naming, health, order, silence; built once in New
	cfg    config
	minTTL time.Duration // the shortest TTL with validity after drift
	judge  fanout.Judge  // judgeVote, bound once; nil when a node's health reads the key (vote.go)
	life   lifecycle     // Close, Shutdown and the operations they wait for
	waits  wait.Hub      // what waiting calls share: grants, contended keys, wake-ups
	env    lease.Env     // what the lock kinds act on (internal/lease)
	noted  fanout.Judge  // note, bound once (vote.go)
	warns  nodeWarnings  // what the degraded warnings remember (degraded.go)
}

// lifecycle is what Close and Shutdown stop and wait for.
type lifecycle struct {
	mu      sync.RWMutex // guards closed, and orders wg.Add before wg.Wait
	closed  bool
	closing chan struct{} // closed by Close: stops waiters and auto-extensions
	wg      sync.WaitGroup
	done    func()         // wg.Done, bound once
	calls   fanout.Workers // runs the node calls of fan-outs, counted in wg

	closeMu  sync.Mutex  // serialises Close and Shutdown
	draining atomic.Bool // set by Shutdown: acquisitions are refused
	held     heldLocks   // locks handed out and not unlocked, for Shutdown
}

// New returns a Client over pools, one per independent Redis master; a lock
// needs len(pools)/2+1 of them. New fails when pools is empty, holds a nil
// Pool or two pools with the same Addr, when an option is invalid, or when
// the drift factor leaves no validity to a TTL of MaxTTL. It calls nothing
// on a pool but Addr. That the pools are independent masters is the
// caller's to ensure; two that reach one server (the same run_id, as the
// pools that tell their identity learn) count for nothing
// (ErrNodeSameServer).
//
// A Client over one or two pools tolerates no node failure; New accepts it
// and logs a warning. Three nodes survive one failure, five survive two.
func New(pools []pool.Pool, opts ...Option) (*Client, error) {
	if len(pools) == 0 {
		return nil, errors.New("redlock: no pools")
	}
	seen := make(map[string]int, len(pools))
	for i, p := range pools {
		addr, ok := addrOf(p)
		if !ok {
			return nil, fmt.Errorf("redlock: pool %d is nil", i)
		}
		if j, dup := seen[addr]; dup {
			return nil, fmt.Errorf("redlock: pools %d and %d have the same address %s", j, i, addr)
		}
		seen[addr] = i
	}
	cfg := config{driftFactor: DefaultDriftFactor, clock: clock.Real{}}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	lo, ok := minTTL(cfg.driftFactor)
	if !ok {
		return nil, fmt.Errorf("redlock: drift factor %v leaves no validity to any ttl up to %v", cfg.driftFactor, MaxTTL)
	}
	if cfg.longest() < lo {
		return nil, fmt.Errorf("redlock: max ttl %v is shorter than the shortest ttl %v", cfg.longest(), lo)
	}
	c := &Client{cfg: cfg, minTTL: lo}
	c.nodes = node.New(pools, node.Config{
		Quarantine:  quarantineFor(cfg),
		MaxTTL:      cfg.longest(),
		BoundCap:    MaxTTL,
		ClockEvery:  cfg.clockEvery,
		ClockHold:   clockHold(cfg),
		DriftFactor: cfg.driftFactor,
		Timeout:     c.nodeTimeout(0),
		Settle:      NodeTimeoutLimit, // any Client's votes, not only this one's (WithNodeTimeout)
		Clock:       cfg.clock,
		Report:      c.reportNode,
		Refusal:     isHeldCause, // the key is held: the node answered
	})
	c.env = lease.NewEnv(c.nodes, cfg.lockDelay, cfg.longest(), &c.waits.Grants)
	c.noted = c.note
	c.warns = newNodeWarnings(pools)
	c.warnFewNodes()
	if !c.nodes.HealthReadsAny() {
		c.judge = c.judgeVote // else decide binds a judge to each decision's key
	}
	c.life.closing = make(chan struct{})
	c.life.done = c.life.wg.Done
	c.life.calls.Calls = &c.life.wg
	c.waits.Init(wait.HubConfig{
		Channel:   wait.ChannelPrefix + newToken(),
		Notifiers: notifiers(pools),
		Health:    c.grantHealth,
		Reads:     c.nodes.HealthReads,
		Timeout:   c.nodeTimeout(0),
		Clock:     cfg.clock,
		Closing:   c.life.closing,
		Stopped:   stopped,
	})
	c.nodes.Start(c.life.closing)
	return c, nil
}

// addrOf returns p's Addr, and false for a nil pool: a nil interface
// value, or a nil pointer of an adapter whose Addr cannot take one (it
// panics, which New turns into an error instead).
func addrOf(p pool.Pool) (addr string, ok bool) {
	if p == nil {
		return "", false
	}
	defer func() {
		if recover() != nil {
			addr, ok = "", false
		}
	}()
	return p.Addr(), true
}

// errNilClient is the error of every call on a nil Client.
var errNilClient = errors.New("redlock: nil client")

// Quorum returns the number of nodes a lock needs: len(pools)/2+1, or 0 for
// a nil Client.
func (c *Client) Quorum() int {
	if c == nil {
		return 0
	}
	return c.nodes.Quorum()
}

// Close stops new operations, waiting Lock calls (they return ErrClosed) and
// auto-extensions (their locks report ErrLockLost), closes the listeners,
// and waits for the Client's background node calls to end. A node call
// runs for up to four node timeouts (see WithNodeTimeout: the decision does
// not wait for it, but the call is not cut, so that its connection is
// kept), and the cleanup of a failed attempt may follow it as long again,
// so Close returns within eight node timeouts (4s at the default 500ms for
// a TTL of 10s or more), at once when no call is in flight. Locks still
// held expire by their TTL: to release them, call Shutdown instead. Close
// does not close the pools. It is safe to call twice; on a nil Client it
// returns an error.
func (c *Client) Close() error {
	if c == nil {
		return errNilClient
	}
	c.life.closeMu.Lock()
	defer c.life.closeMu.Unlock()
	c.stop()
	return nil
}

// stop refuses new operations, ends waits and auto-extensions, and waits
// for every operation and background call of the Client to end.
func (c *Client) stop() {
	c.life.mu.Lock()
	c.life.closed = true
	select {
	case <-c.life.closing: // Shutdown stops twice
	default:
		close(c.life.closing)
	}
	c.life.mu.Unlock()
	c.waits.Close()
	c.nodes.Stop()
	c.life.wg.Wait()
	c.life.calls.Close()
}

// begin registers an operation so that Close waits for it. The returned
// function ends it; it is the same function every time (no allocation).
func (c *Client) begin() (func(), error) {
	if c == nil {
		return nil, errNilClient
	}
	c.life.mu.RLock()
	defer c.life.mu.RUnlock()
	if c.life.closed {
		return nil, ErrClosed
	}
	c.life.wg.Add(1)
	return c.life.done, nil
}

// newToken returns a random token: 128 bits or more from crypto/rand.
func newToken() string { return lease.NewToken() }

// notifiers returns each pool's notification API, nil for a pool without
// one: what the Client's listeners need of the nodes.
func notifiers(pools []pool.Pool) []pool.Notifier {
	out := make([]pool.Notifier, len(pools))
	for i, p := range pools {
		out[i], _ = p.(pool.Notifier)
	}
	return out
}

// heldLocks is the set of locks a Client has handed out and that were not
// unlocked, for Shutdown. A lock is added when obtained and removed by
// Unlock; one never unlocked is dropped once it has surely expired on the
// nodes, a TTL after the end of its validity.
type heldLocks struct {
	mu    sync.Mutex
	locks map[*Lock]struct{}
	prune int // the size at which add next drops expired locks
}

// add records l, obtained at now.
func (h *heldLocks) add(l *Lock, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.locks == nil {
		h.locks = make(map[*Lock]struct{})
	}
	if len(h.locks) >= h.prune {
		for x := range h.locks {
			if now.After(x.Until().Add(x.ttl)) {
				delete(h.locks, x)
			}
		}
		h.prune = max(2*len(h.locks), 64) // amortised: O(1) per add
	}
	h.locks[l] = struct{}{}
}

// remove forgets l.
func (h *heldLocks) remove(l *Lock) {
	h.mu.Lock()
	delete(h.locks, l)
	h.mu.Unlock()
}

// list returns the locks held.
func (h *heldLocks) list() []*Lock {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*Lock, 0, len(h.locks))
	for l := range h.locks {
		out = append(out, l)
	}
	return out
}

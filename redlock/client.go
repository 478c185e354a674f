package redlock

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/internal/fanout"
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
	warns  nodeWarnings  // what the degraded warnings remember (degraded.go)
}

// lifecycle is what Close and Shutdown stop and wait for.
type lifecycle struct {
	mu      sync.RWMutex // guards closed, and orders wg.Add before wg.Wait
	closed  bool
	closing chan struct{} // closed by Close: stops waiters and auto-extensions
	wg      sync.WaitGroup
	done    func() // wg.Done, bound once

	closeMu  sync.Mutex  // serialises Close and Shutdown
	draining atomic.Bool // set by Shutdown: acquisitions are refused
	held     heldLocks   // locks handed out and not unlocked, for Shutdown
}

// New returns a Client over pools, one per independent Redis master. A lock
// needs len(pools)/2+1 of them. New checks, in this order, and fails on the
// first that does not hold: there is at least one pool; no pool is nil (a
// nil interface value, or a nil adapter whose Addr panics); no two pools have the same Addr (the same pool given
// twice included); every option is valid; and the drift factor leaves some
// validity to a TTL of at most MaxTTL. It calls nothing on a pool but Addr,
// and cannot tell two addresses of one server apart: that the pools are
// independent masters is the caller's to ensure.
//
// A Client over one or two pools tolerates no node failure: its majority
// is every node, so one node down, silent or quarantined stops every
// acquisition and extension. New accepts it (a single node for
// development, say) and logs it at Warn to each WithLogger logger; three
// nodes survive one failure, five survive two (docs/safety.md).
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
	c := &Client{cfg: cfg, minTTL: lo}
	c.nodes = node.New(pools, node.Config{
		Quarantine:  quarantineFor(cfg),
		ClockEvery:  cfg.clockEvery,
		ClockHold:   clockHold(cfg),
		DriftFactor: cfg.driftFactor,
		Timeout:     c.nodeTimeout(0),
		Clock:       cfg.clock,
		Report:      c.reportNode,
		Refusal:     isHeldCause, // the key is held: the node answered
	})
	c.warns = newNodeWarnings(pools)
	c.warnFewNodes()
	c.warnUnchecked()
	if !c.nodes.HealthReadsAny() {
		c.judge = c.judgeVote // else decide binds a judge to each decision's key
	}
	c.life.closing = make(chan struct{})
	c.life.done = c.life.wg.Done
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
	c.nodes.StartClocks(c.life.closing)
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
	c.nodes.StopClocks()
	c.life.wg.Wait()
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

// TryLock makes one attempt to take the lock on key for ttl. It returns the
// lock, or an error wrapping ErrNotObtained (and ctx.Err() when ctx ended the
// attempt) with one *NodeError per node that did not agree. It does not wait
// for a slow node once the majority has decided, and the cleanup of a failed
// attempt runs in the background. Once a node has answered that the key is
// held, it waits for the nodes still silent at most a quarter of the node
// timeout (50ms at most) before it gives up, rather than the whole node
// timeout: a silent node does not stall contended attempts, nor the waiters
// whose nodes such an attempt took. (Not less: a node that restarted needs
// a new connection, and must still be able to answer.) WithFairness makes it respect the queue of
// waiters: it takes the lock only if nobody waits for it.
//
// Simultaneous callers can split the nodes so that none has a majority
// (three Clients on three nodes, one node each). A refused TryLock that won
// at least one node while every other node said the key is held may be in
// such a split, and tries again after a random delay (1ms to a quarter of
// the node timeout, at most 50ms), up to twice while the refusals still
// look so, before it reports ErrNotObtained; so do TryRLock, TryAcquirePermit and TryLockAll. A key
// held by one owner on every node gives no yes, and is refused after one
// attempt.
//
// SET NX cannot tell a lock from a key of another kind, so a refused
// TryLock asks one node that refused what the key holds (one more round
// trip, bounded by the node timeout): a key that holds permits, or one of
// the application's, is reported as that node's ErrWrongKind. Lock learns
// it from its first round in the queue, and returns at once.
//
// ttl counts in whole milliseconds, as Redis does, from the shortest that
// outlasts the drift allowance (3ms with the default WithDriftFactor) to
// MaxTTL; outside that range TryLock and Lock return an error without
// calling a node.
//
// key must not be empty nor one of the names the library keeps beside a key
// (docs/design.md, "Key names"): a key ending with ":fence", ":queue",
// ":queue:leases", ":queue:entries", ":queue:left", ":queue:watch",
// ":queue:holds", ":held", ":readers" or ":leader"; one beginning with
// "fence{", "queue{", "queue:leases{", "queue:entries{", "queue:left{",
// "held{", "readers{" or "leader{"; one beginning with "election:"
// (Campaign's), "redlock:fresh-start", "redlock:reign" or
// "redlock:ceiling". Every acquisition refuses such a key with an error
// saying "reserved", without calling a node, so no caller's key can touch
// another lock's fence counter, queue or leader record.
func (c *Client) TryLock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	done, lc, err := c.beginLock(ctx, key, ttl, opts)
	if err != nil {
		return nil, err
	}
	defer done()
	if lc.owner != "" {
		return c.lockOwned(ctx, key, lc, false) // reentry.go
	}
	start := c.cfg.clock.Now()
	ttl = lc.ttl
	var l *Lock
	attempts := 1
	if lc.fair {
		l, _, err = c.wait(ctx, key, ttl, lc, 0, false)
	} else {
		attempts, err = c.settleSplit(ctx, c.nodeTimeout(ttl), func() (err error) {
			l, err = c.acquire(ctx, key, ttl, lc)
			return err
		})
		if err != nil {
			err = c.nameKind(ctx, key, err)
		}
	}
	if err != nil {
		err = withContext(err, ctx.Err())
	}
	return c.obtained(ctx, key, l, err, start, attempts, lc)
}

// Lock takes the lock on key for ttl, waiting until it succeeds or ctx
// ends. On failure the error wraps ErrNotObtained and, when ctx ended the
// wait, ctx.Err(); it returns within ctx's deadline whatever the nodes do,
// and a lock it returns is valid (Until() in the future).
//
// It tries once at once. If the lock is held, it joins the queue of waiters
// kept next to the key on every node (part of the same attempt). A release
// hands the key to the first waiter on each node and tells it: the waiter
// holds the lock once a majority of nodes have, without a new attempt and
// without waking anyone else. Waiters are served in the order they queued,
// across Clients and processes. Retry k (k = 1, 2, ...) of the retry
// strategy (WithRetry) is one round of calls to the nodes, sent NextDelay(k)
// (at least 10ms) after the attempt before it: it refreshes the waiter's
// place and takes the key if it is free and the waiter is first, which
// covers a lost message and an expiry. Between retries further apart than a
// third of the TTL, rounds at that interval keep the waiter's place; they
// are not retries and do not use up the strategy, though they too take a
// free key. When the strategy stops, Lock returns the last error once the
// last retry's round has answered, never before that retry was due.
//
// WithFairness skips the first try: the caller's first attempt is to join
// the queue, so it never overtakes a waiter. So does a Lock call on a key
// that this Client's Lock calls found held within the last second: under
// contention a release hands the key straight to a waiter, so the try could
// only be refused. With NoRetry, Lock makes one attempt, and leaves the
// queue again if it joined it.
func (c *Client) Lock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	done, lc, err := c.beginLock(ctx, key, ttl, opts)
	if err != nil {
		return nil, err
	}
	defer done()
	if lc.owner != "" {
		return c.lockOwned(ctx, key, lc, true) // reentry.go
	}
	start := c.cfg.clock.Now()
	ttl = lc.ttl
	// NextDelay(1) is asked once, before the first attempt's end is known.
	delay, retry := lc.retry.NextDelay(1)
	if !lc.fair && (!retry || !c.waits.Busy.Is(key, start)) {
		l, err := c.acquire(ctx, key, ttl, lc)
		if err, end := afterAttempt(ctx, err, nil, retry); end {
			return c.obtained(ctx, key, l, err, start, 1, lc)
		}
		c.waits.Busy.Mark(key, start)
	}
	l, retries, err := c.wait(ctx, key, ttl, lc, delay, retry)
	return c.obtained(ctx, key, l, err, start, 1+retries, lc)
}

// obtained ends an acquisition: it starts the keeper of a lock taken
// WithAutoExtend and reports the outcome to the observers.
func (c *Client) obtained(ctx context.Context, key string, l *Lock, err error, start time.Time, attempts int, lc lockConfig) (*Lock, error) {
	e := Event{Kind: Acquired, Key: key, Start: start, Duration: c.cfg.clock.Since(start), Attempts: attempts, Err: err}
	if err != nil {
		e.Kind = NotObtained
		c.emit(ctx, e)
		return nil, err
	}
	l.acquiredAt = c.cfg.clock.Now()
	c.life.held.add(l, l.acquiredAt)
	e.Fence = l.fence
	c.emit(ctx, e)
	if lc.autoExtend {
		l.startKeeper(lc)
	}
	return l, nil
}

// beginLock is the prologue of every acquisition: it registers the operation
// (begin) and validates the arguments (check). On success the caller defers
// done; on failure nothing is left registered.
func (c *Client) beginLock(ctx context.Context, key string, ttl time.Duration, opts []LockOption) (func(), lockConfig, error) {
	done, err := c.begin()
	if err != nil {
		return nil, lockConfig{}, err
	}
	lc, err := c.check(ctx, key, ttl, opts)
	if err != nil {
		done()
		return nil, lockConfig{}, err
	}
	return done, lc, nil
}

// check validates the arguments common to every acquisition.
func (c *Client) check(ctx context.Context, key string, ttl time.Duration, opts []LockOption) (lockConfig, error) {
	if ctx == nil {
		return lockConfig{}, errors.New("redlock: nil context")
	}
	if c.life.draining.Load() {
		return lockConfig{}, ErrClosed // Shutdown has begun
	}
	lc, err := c.lockConfig(opts)
	if err != nil {
		return lockConfig{}, err
	}
	if !lc.election {
		err = checkKey(key)
	}
	if err == nil {
		err = c.checkTTL(ttl)
	}
	if err == nil && lc.autoExtend {
		err = c.checkKeepable(ttl)
	}
	if err == nil {
		err = c.checkMaxHold(ttl, lc)
	}
	lc.ttl = ttl.Truncate(time.Millisecond) // Redis keeps milliseconds
	return lc, err
}

// newToken returns a random token: 128 bits or more from crypto/rand.
func newToken() string { return rand.Text() }

// newLock returns a Lock on key with token for ttl (whole milliseconds).
// Its kind is set once it holds (attempt, granted).
func (c *Client) newLock(key, token string, ttl time.Duration, heal bool) *Lock {
	return &Lock{c: c, key: key, token: token, ttl: ttl, heal: heal, leave: ""}
}

// acquire is one attempt at the exclusive lock on key (the engine's
// attempt, with the exclusive kind lc chooses).
func (c *Client) acquire(ctx context.Context, key string, ttl time.Duration, lc lockConfig) (*Lock, error) {
	l := c.newLock(key, newToken(), ttl, lc.heal)
	l.ex = c.exclusiveKind(key, lc)
	return c.attempt(ctx, l, &l.ex, lc, nil)
}

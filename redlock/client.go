package redlock

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/internal/fanout"
	"github.com/redlockgo/redlock/internal/scripts"
	"github.com/redlockgo/redlock/pool"
)

// Client takes locks on a fixed set of independent Redis nodes. It is safe for
// concurrent use; create one per set of nodes and share it.
//
// A Client owns the short-lived goroutines that finish node calls after an
// operation has decided (stragglers, cleanup). Close waits for them. The
// pools stay the caller's: Close does not close them.
type Client struct {
	// id is sent with this Client's release messages, so that its listeners
	// can skip them: Unlock wakes the Client's own waiters directly.
	id     string
	pools  []pool.Pool
	quorum int
	cfg    config
	minTTL time.Duration // the shortest TTL with validity after drift

	mu       sync.RWMutex // guards closed, and orders wg.Add before wg.Wait
	closed   bool
	closing  chan struct{} // closed by Close: stops auto-extensions
	wg       sync.WaitGroup
	done     func() // c.wg.Done, bound once
	waiters  waiters
	releases releases

	closeMu  sync.Mutex  // serialises Close and Shutdown
	draining atomic.Bool // set by Shutdown: acquisitions are refused
	held     heldLocks   // locks handed out and not unlocked, for Shutdown
}

// New returns a Client over pools, one per independent Redis master. A lock
// needs len(pools)/2+1 of them. New fails on no pools, a nil pool, the same
// pool or address twice, or an invalid option.
func New(pools []pool.Pool, opts ...Option) (*Client, error) {
	if len(pools) == 0 {
		return nil, errors.New("redlock: no pools")
	}
	seen := make(map[string]int, len(pools))
	for i, p := range pools {
		if isNil(p) {
			return nil, fmt.Errorf("redlock: pool %d is nil", i)
		}
		for j := range i {
			if samePool(pools[j], p) {
				return nil, fmt.Errorf("redlock: pool %d is the same as pool %d", i, j)
			}
		}
		if j, dup := seen[p.Addr()]; dup {
			return nil, fmt.Errorf("redlock: pools %d and %d have the same address %s", j, i, p.Addr())
		}
		seen[p.Addr()] = i
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
	c := &Client{
		id:      rand.Text(),
		pools:   append([]pool.Pool(nil), pools...),
		quorum:  len(pools)/2 + 1,
		cfg:     cfg,
		minTTL:  lo,
		closing: make(chan struct{}),
	}
	c.waiters.c = c
	c.done = c.wg.Done
	return c, nil
}

// errNilClient is the error of every call on a nil Client.
var errNilClient = errors.New("redlock: nil client")

// Quorum returns the number of nodes a lock needs: len(pools)/2+1, or 0 for
// a nil Client.
func (c *Client) Quorum() int {
	if c == nil {
		return 0
	}
	return c.quorum
}

// Close stops new operations and auto-extensions (their locks report
// ErrLockLost), and waits for the Client's background node calls to end; each
// is bounded by the node timeout. Locks still held expire by their TTL: to
// release them, call Shutdown instead. Close does not close the pools. It is
// safe to call twice; on a nil Client it returns an error.
func (c *Client) Close() error {
	if c == nil {
		return errNilClient
	}
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	c.stop()
	return nil
}

// stop refuses new operations, ends waits and auto-extensions, and waits
// for every operation and background call of the Client to end.
func (c *Client) stop() {
	c.mu.Lock()
	c.closed = true
	select {
	case <-c.closing: // Shutdown stops twice
	default:
		close(c.closing)
	}
	c.mu.Unlock()
	c.waiters.close()
	c.wg.Wait()
}

// begin registers an operation so that Close waits for it. The returned
// function ends it; it is the same function every time (no allocation).
func (c *Client) begin() (func(), error) {
	if c == nil {
		return nil, errNilClient
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return nil, ErrClosed
	}
	c.wg.Add(1)
	return c.done, nil
}

// TryLock makes one attempt to take the lock on key for ttl. It returns the
// lock, or an error wrapping ErrNotObtained (and ctx.Err() when ctx ended the
// attempt) with one *NodeError per node that did not agree. It does not wait
// for a slow node once the majority has decided.
//
// ttl counts in whole milliseconds, as Redis does, from the shortest that
// outlasts the drift allowance (3ms with the default WithDriftFactor) to
// MaxTTL; outside that range TryLock and Lock return an error without
// calling a node.
func (c *Client) TryLock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	done, err := c.begin()
	if err != nil {
		return nil, err
	}
	defer done()
	lc, err := c.check(ctx, key, ttl, opts)
	if err != nil {
		return nil, err
	}
	start := c.cfg.clock.Now()
	if lc.fair {
		lc.ticket = c.newTicket(ttl)
	}
	l, err := c.acquire(ctx, key, ttl, lc)
	if err != nil {
		err = withContext(err, ctx.Err())
	}
	if lc.fair {
		c.leaveQueueAfter(ctx, key, lc.ticket, c.nodeTimeout(ttl), l, 1)
	}
	return c.obtained(ctx, key, l, err, start, 1, lc)
}

// Lock takes the lock on key for ttl, waiting until it succeeds or ctx
// ends. On failure the error wraps ErrNotObtained and, when ctx ended the
// wait, ctx.Err().
//
// Callers of one Client wait in arrival order and only the first of them
// tries; a release wakes it (pub/sub), and the retry strategy (WithRetry) is
// the fallback for a lost message or an expired lock. When the holder is a
// caller of the same Client and no other Client waits, its Unlock hands the
// lock straight to the next caller: share one Client among a process's
// goroutines. WithFairness orders callers across Clients too.
func (c *Client) Lock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	done, err := c.begin()
	if err != nil {
		return nil, err
	}
	defer done()
	lc, err := c.check(ctx, key, ttl, opts)
	if err != nil {
		return nil, err
	}
	return c.wait(ctx, key, ttl, lc)
}

// wait is Lock's loop. The first attempt is immediate unless callers of this
// Client already wait for key; then the caller queues (see waiters). Only
// the head of the queue attempts: when woken by a release, when promoted, or
// after the retry strategy's delay (see fallback). A head promoted behind a
// holder of this Client parks instead, and may be handed the lock.
func (c *Client) wait(ctx context.Context, key string, ttl time.Duration, lc lockConfig) (*Lock, error) {
	start := c.cfg.clock.Now()
	var (
		w       *waiter
		attempt int
		// Reported if ctx ends before this caller's first attempt.
		lastErr error = fmt.Errorf("%w: queued behind other callers of this Client", ErrNotObtained)
	)
	var won *Lock // the lock obtained, if any
	if lc.fair {
		lc.ticket = c.newTicket(ttl)
	}
	defer func() {
		if w != nil {
			var until time.Time // for the next waiter: how long we may hold it
			if won != nil {
				until = won.Until()
			}
			c.waiters.leave(ctx, key, w, until)
		}
		if lc.fair {
			c.leaveQueueAfter(ctx, key, lc.ticket, c.nodeTimeout(ttl), won, attempt)
		}
	}()
	// A fair waiter queues before its first attempt: only the head of a
	// Client's queue ever enters the queues on the nodes, so no entry there
	// belongs to a local waiter that is not trying.
	if lc.fair || c.waiters.busy(key) {
		w = c.waiters.join(ctx, key, ttl, lc)
	}
	var delay time.Duration
	for {
		head := w == nil || c.waiters.head(key, w)
		if head && w != nil {
			// Parked behind the holder (promoted when it got the lock, or
			// since), we may have been handed the lock by its Unlock
			// (Lock.handOver).
			if o := c.waiters.unpark(w); o != nil {
				attempt++
				l, err := c.accept(ctx, o)
				if err == nil {
					won = l
					return c.obtained(ctx, key, l, nil, start, attempt, lc)
				}
				if ctx.Err() != nil {
					return c.obtained(ctx, key, nil, withContext(err, ctx.Err()), start, attempt, lc)
				}
				lastErr = err // the hand-over failed: try the usual way
			}
			if until := c.waiters.takeHandoff(w); !until.IsZero() {
				// The holder is the waiter before us: trying now would fail.
				// Its Unlock wakes us, whatever its outcome; should it never
				// come, the end of the lock's validity does.
				c.waiters.park(w)
				if err := c.sleep(ctx, w, max(until.Sub(c.cfg.clock.Now()), 0), lc.ticket); err != nil {
					if o := c.waiters.unpark(w); o != nil {
						attempt++
						_, _ = c.accept(ctx, o) // too late: any lock it brings is passed on
					}
					return c.obtained(ctx, key, nil, withContext(lastErr, err), start, attempt, lc)
				}
				continue
			}
		}
		if head {
			attempt++
			l, err := c.acquire(ctx, key, ttl, lc)
			if err == nil {
				won = l
				return c.obtained(ctx, key, l, nil, start, attempt, lc)
			}
			lastErr = err
			if ctx.Err() != nil {
				return c.obtained(ctx, key, nil, withContext(err, ctx.Err()), start, attempt, lc)
			}
			d, ok := lc.retry.NextDelay(attempt)
			if !ok {
				return c.obtained(ctx, key, nil, err, start, attempt, lc)
			}
			delay = c.fallback(err, d, lc.retry)
			if w == nil {
				// Subscribe, then try once more at once: a release between
				// the failed attempt and the subscription would go unheard.
				w = c.waiters.join(ctx, key, ttl, lc)
				continue
			}
		} else {
			delay = -1 // not the head: wait to be promoted
		}
		if err := c.sleep(ctx, w, delay, lc.ticket); err != nil {
			return c.obtained(ctx, key, nil, withContext(lastErr, err), start, attempt, lc)
		}
	}
}

// fallback adjusts d, the retry strategy's delay after a failed attempt, by
// what the attempt saw:
//   - it won some nodes but not a majority: the lock is being released, or
//     was split between contenders who all back off now and whose cleanup
//     announces nothing. Retry after the strategy's first step, still at
//     random, not after a delay grown over a long wait. (A yes that arrives
//     after the majority refused is not seen here: then the next rule may
//     apply, and the wait lasts until the bound.)
//   - a majority refused it, and release messages reach this Client from a
//     majority of the nodes: the holder's release will wake it. Sleep the
//     strategy's bound, the fallback for a lost message or an expiry,
//     instead of polling the nodes on the way.
func (c *Client) fallback(err error, d time.Duration, s RetryStrategy) time.Duration {
	var qe *QuorumError
	if !errors.As(err, &qe) {
		return d
	}
	if qe.Agreed > 0 {
		if first, ok := s.NextDelay(1); ok {
			return min(d, first)
		}
		return d
	}
	taken := 0
	for _, n := range qe.Nodes {
		if errors.Is(n.Err, ErrTaken) {
			taken++
		}
	}
	if bound, ok := capOf(s); ok && taken >= c.quorum && c.waiters.notified() {
		return max(d, jitter(bound))
	}
	return d
}

// notGranted returns the nodes that did not vote yes in res.
func notGranted(res fanout.Result, n int) []int {
	granted := make([]bool, n)
	for _, v := range res.Votes {
		granted[v.Node] = v.OK
	}
	out := make([]int, 0, n-res.Yes)
	for i, g := range granted {
		if !g {
			out = append(out, i)
		}
	}
	return out
}

// accept waits for an offer to be done (within the Unlock's node timeout)
// and returns the lock it brought. A lock that arrives after ctx ended, or
// the Client closed, is released again (possibly to the next waiter).
func (c *Client) accept(ctx context.Context, o *offer) (*Lock, error) {
	<-o.done
	if o.lock == nil {
		return nil, o.err
	}
	if err := ctx.Err(); err != nil {
		_ = o.lock.Unlock(context.WithoutCancel(ctx))
		return nil, err
	}
	return o.lock, nil
}

// sleep waits for w to be woken, for delay to pass (delay < 0: no timer),
// or for ctx to end or the Client to close, which it returns. A waiter
// holding a fair ticket t (nil otherwise) never sleeps past a third of the
// ticket's lease, so the head's lease stays fresh.
func (c *Client) sleep(ctx context.Context, w *waiter, delay time.Duration, t *ticket) error {
	if t != nil && (delay < 0 || delay > t.lease/3) {
		delay = t.lease / 3
	}
	var timeout <-chan time.Time
	if delay >= 0 {
		t := c.cfg.clock.NewTimer(delay)
		defer t.Stop()
		timeout = t.C()
	}
	select {
	case <-w.wake:
		return nil
	case <-timeout:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closing:
		return ErrClosed // Close must not wait for this caller's context
	}
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
	c.held.add(l, l.acquiredAt)
	e.Fence = l.fence
	c.emit(ctx, e)
	if lc.autoExtend {
		l.startKeeper(lc)
	}
	return l, nil
}

// check validates the arguments common to every acquisition.
func (c *Client) check(ctx context.Context, key string, ttl time.Duration, opts []LockOption) (lockConfig, error) {
	if ctx == nil {
		return lockConfig{}, errors.New("redlock: nil context")
	}
	if key == "" {
		return lockConfig{}, errors.New("redlock: empty key")
	}
	if c.draining.Load() {
		return lockConfig{}, ErrClosed // Shutdown has begun
	}
	if err := c.checkTTL(ttl); err != nil {
		return lockConfig{}, err
	}
	lc, err := c.lockConfig(opts)
	if err == nil && lc.autoExtend {
		err = c.checkKeepable(ttl)
	}
	return lc, err
}

// newLock returns a Lock with a fresh token whose acquisition is about to
// be sent to every node. ttl is in whole milliseconds.
func (c *Client) newLock(key string, ttl time.Duration, heal, fair bool) *Lock {
	l := &Lock{c: c, key: key, token: rand.Text(), ttl: ttl, heal: heal, fair: fair,
		settled: make([]atomic.Bool, len(c.pools)), allSettled: make(chan struct{})}
	l.unsettled.Store(int32(len(c.pools)))
	return l
}

// acquire is one attempt of the algorithm: SET NX PX on every node in
// parallel, a decision at the majority, validity checked against the
// monotonic clock, and cleanup of every node that may hold our token when the
// attempt fails. Each attempt has its own token, so a cleanup still running
// in the background can never remove a later attempt's lock.
func (c *Client) acquire(ctx context.Context, key string, ttl time.Duration, lc lockConfig) (*Lock, error) {
	ttl = ttl.Truncate(time.Millisecond) // Redis keeps milliseconds
	l := c.newLock(key, ttl, lc.heal, lc.ticket != nil)
	timeout := c.nodeTimeout(ttl)
	decided := make(chan struct{}) // closed once failed is final
	failed := false
	var counters []uint64 // fence counters read in phase 1, one slot per node
	if lc.fencing {
		counters = make([]uint64, len(c.pools))
	}
	prev := c.releases.pending(key)
	start := c.cfg.clock.Now()

	res := fanout.Quorum(ctx, &c.wg, len(c.pools), c.quorum, timeout,
		func(ctx context.Context, i int) (bool, error) {
			defer l.settle(i)
			if err := prev.wait(ctx, i); err != nil {
				return false, err
			}
			if lc.fencing {
				return c.setFenced(ctx, i, key, l.token, ttl, &counters[i])
			}
			if lc.ticket != nil {
				return c.setFair(ctx, i, key, l.token, ttl, lc.ticket)
			}
			return c.pools[i].SetNX(ctx, key, l.token, ttl)
		},
		func(v fanout.Vote, _ bool) {
			// A straggler: its SET may have landed after the decision. If
			// the attempt failed, release it here; if it succeeded, the key
			// is part of the lock and Unlock (which waits for this node's
			// answer) releases it.
			<-decided
			if (v.OK || v.Err != nil) && failed {
				c.releaseNode(ctx, timeout, v.Node, key, l.token)
			}
		})

	until := start.Add(ttl - c.drift(ttl))
	var fenceErr error
	if res.Reached && lc.fencing && c.cfg.clock.Now().Before(until) {
		l.fence, fenceErr = c.raiseFence(ctx, l, res, counters, timeout)
	}
	if res.Reached && fenceErr == nil && c.cfg.clock.Now().Before(until) {
		l.until = until
		if lc.ticket != nil {
			l.queued = notGranted(res, len(c.pools))
		}
		close(decided)
		return l, nil
	}
	failed = true
	close(decided)

	// Failed: release everywhere our SET may have landed. The nodes that
	// answered are released before we return; a straggler releases itself
	// when it answers (Close waits for that), so on a slow node our copy may
	// outlive the call by up to one node timeout.
	var dirty []int
	for _, v := range res.Votes {
		if v.OK || v.Err != nil {
			dirty = append(dirty, v.Node)
		}
	}
	fanout.Each(context.WithoutCancel(ctx), &c.wg, dirty, timeout, func(ctx context.Context, i int) (bool, error) {
		return c.release(ctx, i, []string{key}, l.token)
	})
	if fenceErr != nil {
		return nil, fenceErr
	}
	qe := c.quorumError("lock", ErrNotObtained, res)
	if res.Reached {
		qe.Reason = fmt.Sprintf("validity used up after %v", c.cfg.clock.Since(start))
	}
	return nil, qe
}

// release runs compare-and-delete on node i, without a word to waiters.
func (c *Client) release(ctx context.Context, i int, keys []string, token string) (bool, error) {
	return c.announce(ctx, i, scripts.Release, keys, token, "")
}

// announce runs a release script on node i: scripts.Release with the key,
// or scripts.ReleaseFair with the key and its QueueKeys. args are the token,
// then the channel to announce a delete on ("": silent) and the message (the
// Client's id).
func (c *Client) announce(ctx context.Context, i int, s *pool.Script, keys []string, args ...any) (bool, error) {
	n, err := c.pools[i].Eval(ctx, s, keys, args...)
	if err != nil {
		return false, err
	}
	return asInt(n) == 1, nil
}

// releaseNode releases on one node from a background goroutine, bounded by
// timeout whatever the state of the caller's context.
func (c *Client) releaseNode(ctx context.Context, timeout time.Duration, i int, key, token string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	_, _ = c.release(ctx, i, []string{key}, token) // best effort: the key expires by TTL anyway
}

// quorumError builds the error of an operation from its votes, with one
// NodeError per node that did not vote yes, in node order. A plain no is
// reported as ErrTaken for a lock and as ErrNotHeld otherwise; a node with
// no vote (a straggler) as ErrPending.
func (c *Client) quorumError(op string, sentinel error, res fanout.Result) *QuorumError {
	qe := &QuorumError{Op: op, Agreed: res.Yes, Needed: c.quorum, Total: len(c.pools), sentinel: sentinel}
	causes := make([]error, len(c.pools))
	for i := range causes {
		causes[i] = ErrPending
	}
	for _, v := range res.Votes {
		switch {
		case v.OK:
			causes[v.Node] = nil
		case v.Err != nil:
			causes[v.Node] = nodeCause(v.Err)
		case op == "lock":
			causes[v.Node] = ErrTaken
		default:
			causes[v.Node] = ErrNotHeld
		}
	}
	for i, cause := range causes {
		if cause != nil {
			qe.Nodes = append(qe.Nodes, &NodeError{Node: i, Addr: c.pools[i].Addr(), Err: cause})
		}
	}
	return qe
}

func asInt(v any) int64 {
	n, _ := v.(int64)
	return n
}

func isNil(p pool.Pool) bool {
	if p == nil {
		return true
	}
	v := reflect.ValueOf(p)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// samePool compares two pools without panicking on uncomparable types.
func samePool(a, b pool.Pool) bool {
	if reflect.TypeOf(a) != reflect.TypeOf(b) || !reflect.TypeOf(a).Comparable() {
		return false
	}
	return a == b
}

package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/internal/fanout"
	"github.com/redlockgo/redlock/internal/lease"
	"github.com/redlockgo/redlock/internal/scripts"
)

// Lock is a lock held on a majority of nodes until Until(). It is safe for
// concurrent use; Extend and Unlock calls are serialised.
//
// Holding a Lock is a lease, not a guarantee: once Until() has passed, another
// client may hold the same key. Check Until() before acting, extend in time,
// or use Client.Do, which does both.
//
// TryRLock, RLock, TryAcquirePermit and AcquirePermit return a Lock too: one
// reader's or one permit's lease, which its methods act on alone.
type Lock struct {
	c     *Client
	key   string
	token string
	ttl   time.Duration
	heal  bool
	// leave is Release's ARGV[2] for this lock: for a lock that came
	// through the queue, how long its token may not queue again (a round of
	// its waiter may still be on its way); "" otherwise.
	leave any
	fence uint64
	// kind acts on the nodes for the lock's kind (internal/lease):
	// exclusive, owner's, multi, reader, permit. Set before the Lock is
	// returned.
	kind lease.Kind
	ex   lease.Exclusive // an exclusive lock's kind, which kind points to (no allocation of its own)
	// acquiredAt is set before the Lock is returned, then only read.
	acquiredAt time.Time
	released   atomic.Bool

	opMu   sync.Mutex // serialises Extend and Unlock
	keeper *keeper    // nil unless WithAutoExtend; set before the Lock is returned

	mu    sync.Mutex
	until time.Time
}

// errNilLock is the error of Extend and Unlock on a nil Lock, such as the
// one a failed TryLock returns: there is no lock to act on.
var errNilLock = fmt.Errorf("%w: nil lock", ErrNotHeld)

// Key returns the Redis key of the lock (for a multi-lock, the first of
// Keys()), or "" for a nil Lock.
func (l *Lock) Key() string {
	if l == nil {
		return ""
	}
	return l.key
}

// Token returns the random value stored under each of Keys() on the nodes
// (at least 128 bits from crypto/rand), or "" for a nil Lock.
func (l *Lock) Token() string {
	if l == nil {
		return ""
	}
	return l.token
}

// Until returns the end of the lock's validity, measured on the Client's
// clock (the monotonic clock by default), or the zero time for a nil Lock.
// Validity is the TTL less the time the acquisition took and the allowance
// for clock drift.
func (l *Lock) Until() time.Time {
	if l == nil {
		return time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

func (l *Lock) setUntil(t time.Time) {
	l.mu.Lock()
	l.until = t
	l.mu.Unlock()
}

// Extend sets the lock's TTL to ttl on every node that still holds our
// token, or keeps the TTL the key has there when that is longer, and
// recomputes Until() from the start of the call and ttl. It succeeds only
// at a majority and only before Until(); it never re-creates an expired
// lock, and never shortens one: another handle of the same token (Resume)
// may count on the longer TTL.
//
// On failure Until() is left unchanged (or moved earlier, if ttl was shorter
// than what remained) and the error wraps ErrNotHeld when the lock is known
// to be gone (validity ran out, or a majority holds no longer our token), or
// ErrNotExtended when nodes did not answer in time.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	done, err := l.begin()
	if err != nil {
		return err
	}
	defer done()
	c := l.c
	if ctx == nil {
		return errors.New("redlock: nil context")
	}
	if err := c.checkTTL(ttl); err != nil {
		return err
	}
	ttl = ttl.Truncate(time.Millisecond)
	return l.extend(ctx, ttl, c.nodeTimeout(ttl))
}

// begin registers an operation on the lock with its Client (Client.begin),
// or fails for a nil Lock.
func (l *Lock) begin() (func(), error) {
	if l == nil || l.c == nil {
		return nil, errNilLock
	}
	return l.c.begin()
}

// extend is Extend after argument checks, each node call bounded by
// timeout; the auto-extension calls it too. It reports the outcome to the
// observers.
func (l *Lock) extend(ctx context.Context, ttl, timeout time.Duration) error {
	start := l.c.cfg.clock.Now()
	err := l.extendOnce(ctx, ttl, timeout)
	e := Event{Kind: Extended, Key: l.key, Start: start, Duration: l.c.cfg.clock.Since(start), Fence: l.fence, Err: err}
	if err != nil {
		e.Kind = ExtendFailed
	}
	l.c.emit(ctx, e)
	return err
}

func (l *Lock) extendOnce(ctx context.Context, ttl, timeout time.Duration) error {
	c := l.c
	l.opMu.Lock()
	defer l.opMu.Unlock()
	if l.released.Load() {
		return fmt.Errorf("%w: already unlocked", ErrNotHeld)
	}
	start := c.cfg.clock.Now()
	old := l.Until()
	if !start.Before(old) {
		return fmt.Errorf("%w: validity ended %v ago", ErrNotHeld, start.Sub(old))
	}

	absent := make([]bool, c.nodes.Len()) // each written only by its node's goroutine
	decided := make(chan struct{})        // closed once extended is final
	extended := false
	slots := c.nodes.TakeAll(l.key, l.token, false, nil)
	res := c.decide(ctx, l.key, timeout, 0,
		func(ctx context.Context, i int) (bool, error) {
			return slots[i].Run(ctx, func(ctx context.Context) (bool, error) {
				r, err := l.kind.Extend(ctx, &c.env, i, l.token, ttl)
				if err != nil {
					return false, err
				}
				absent[i] = r == scripts.ExtendAbsent
				return r == scripts.ExtendExtended, nil
			})
		},
		func(v fanout.Vote, _ bool) {
			<-decided
			if extended && l.heal && absent[v.Node] && !l.released.Load() {
				l.healNodes(ctx, []int{v.Node}, ttl, timeout)
			}
		}, nil)
	defer close(decided)

	now := c.cfg.clock.Now()
	until := start.Add(ttl - c.drift(ttl))
	if res.Reached && now.Before(old) && now.Before(until) {
		l.setUntil(until)
		extended = true
		if l.heal {
			var nodes []int
			for _, v := range res.Votes {
				if absent[v.Node] {
					nodes = append(nodes, v.Node)
				}
			}
			l.healNodes(ctx, nodes, ttl, timeout)
		}
		return nil
	}
	l.setUntil(minTime(old, until))
	return withContext(c.extendError(res, absent, !now.Before(old)), callerErr(ctx))
}

// extendError is the error of an extension that failed with res: ErrNotHeld
// when the lock had expired or too many nodes refused for any majority to
// remain, ErrNotExtended otherwise. A node that refused while the key was
// there (not absent) reports ErrTaken.
func (c *Client) extendError(res fanout.Result, absent []bool, expired bool) *QuorumError {
	sentinel := ErrNotExtended
	if expired || c.lostMajority(res) {
		sentinel = ErrNotHeld
	}
	qe := c.quorumError("extend", sentinel, res)
	for _, n := range qe.Nodes {
		if errors.Is(n.Err, ErrNotHeld) && !absent[n.Node] {
			n.Err = ErrTaken // the key is there, with another token
		}
	}
	return qe
}

// Unlock stops the auto-extension, if any, releases the lock on every node
// that holds our token, and returns once a majority confirmed. A node that
// deletes our token hands the key at once to the first waiter in its queue
// (see Client.Lock). Each node call is bounded by the node timeout
// even when ctx is already canceled, so that a deferred Unlock still frees
// the lock after the work was canceled; nodes that do not answer keep their
// copy until its TTL runs out.
//
// It returns nil when a majority released the lock; otherwise an error
// wrapping ErrNotHeld (the lock had expired or passed to another owner, or
// was already unlocked) or ErrNotReleased (nodes did not answer in time).
func (l *Lock) Unlock(ctx context.Context) error {
	done, err := l.begin()
	if err != nil {
		return err
	}
	defer done()
	if ctx == nil {
		ctx = context.Background() // a deferred Unlock still frees the lock
	}
	c := l.c
	l.stopKeeper() // before opMu: the keeper may be waiting for it
	l.opMu.Lock()
	defer l.opMu.Unlock()
	if l.released.Swap(true) {
		return fmt.Errorf("%w: already unlocked", ErrNotHeld)
	}
	c.life.held.remove(l)
	start := c.cfg.clock.Now()
	res := l.release(ctx)
	e := Event{Kind: Released, Key: l.key, Start: start, Duration: c.cfg.clock.Since(start), Held: start.Sub(l.acquiredAt), Fence: l.fence}
	if !res.Reached {
		sentinel := ErrNotReleased
		if !c.cfg.clock.Now().Before(l.Until()) || c.lostMajority(res) {
			sentinel = ErrNotHeld
		}
		e.Kind, e.Err = ReleaseFailed, c.quorumError("unlock", sentinel, res)
	}
	c.emit(ctx, e)
	return e.Err
}

// healNodes sets the key again on the nodes that answered the extension with
// "absent", now that a majority has confirmed the lock. They never counted
// toward that majority; healing only restores redundancy, so that a node that
// restarted empty rejoins the lock. SET NX never overwrites another owner.
func (l *Lock) healNodes(ctx context.Context, nodes []int, ttl, timeout time.Duration) {
	if len(nodes) == 0 {
		return
	}
	c := l.c
	slots := c.nodes.TakeAll(l.key, l.token, false, nodes)
	c.each(context.WithoutCancel(ctx), nodes, timeout, func(ctx context.Context, i int) (bool, error) {
		return slots[i].Run(ctx, func(ctx context.Context) (bool, error) {
			var t lease.Take // exactly the lease's place, never over another owner
			return l.kind.Take(ctx, &c.env, i, l.token, ttl, true, lease.Watch{}, &t)
		})
	})
}

// lostMajority reports whether so many nodes answered that they do not
// hold our token that no majority can: the hold is gone, whatever the
// nodes that did not answer say.
func (c *Client) lostMajority(res fanout.Result) bool {
	n := 0
	for _, v := range res.Votes {
		if !v.OK && v.Err == nil {
			n++
		}
	}
	return n > c.nodes.Len()-c.nodes.Quorum()
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

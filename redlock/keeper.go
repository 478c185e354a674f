package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redlockgo/redlock/internal/fanout"
)

// This file is the keeper of an auto-extended lock (WithAutoExtend, Do):
// when it extends, when it declares the lock lost, and why.

// keeper is the state of a lock's auto-extension.
type keeper struct {
	every   time.Duration
	guard   time.Duration // the loss margin
	slack   time.Duration // how much earlier the keeper aims (lossSlack)
	timeout time.Duration // the node timeout
	maxHold time.Duration // WithMaxHold; 0: no cap
	capAt   time.Time     // acquisition + maxHold; zero: no cap
	capped  bool          // the cap allows no more extensions; keep's own
	onLost  func(error)

	ctx    context.Context // canceled by stopKeeper, ending an extension in flight
	cancel context.CancelFunc
	stop   chan struct{} // closed by Unlock
	exited chan struct{} // closed when the goroutine has returned
	done   chan struct{} // closed on loss or stop; err is set before
	err    error
}

// startKeeper launches the auto-extension goroutine, counted in the
// Client's WaitGroup. It must run inside a registered operation.
func (l *Lock) startKeeper(lc lockConfig) {
	every := lc.extendEvery
	if every == 0 {
		every = l.ttl / 3
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.keeper = &keeper{
		ctx:     ctx,
		cancel:  cancel,
		every:   max(every, time.Millisecond),
		guard:   l.c.lossMargin(l.ttl),
		slack:   lossSlack(l.c.nodeTimeout(l.ttl)),
		timeout: l.c.nodeTimeout(l.ttl),
		maxHold: lc.maxHold,
		onLost:  lc.onLost,
		stop:    make(chan struct{}),
		exited:  make(chan struct{}),
		done:    make(chan struct{}),
	}
	if lc.maxHold > 0 {
		l.keeper.capAt = l.acquiredAt.Add(lc.maxHold)
	}
	l.c.life.wg.Add(1)
	go l.keep()
}

// stopKeeper stops the auto-extension, if any, and waits for it to return.
func (l *Lock) stopKeeper() {
	k := l.keeper
	if k == nil {
		return
	}
	k.cancel()
	select {
	case <-k.stop:
	default:
		close(k.stop)
	}
	<-k.exited
}

func (l *Lock) keep() {
	k := l.keeper
	defer l.c.life.wg.Done()
	defer close(k.exited)
	defer k.cancel()
	clk := l.c.cfg.clock

	next := k.due(l.Until(), clk.Now())
	var lastErr error
	for {
		if k.capped {
			next = k.lossAt(l.Until()) // nothing left to do but lose it
		}
		if !l.sleep(minTime(next, k.lossAt(l.Until()))) {
			return // unlocked, or the Client closed
		}
		now := clk.Now()
		lossAt := k.lossAt(l.Until())
		if !now.Before(lossAt) {
			// Extensions did not get through in time, the cap stopped them,
			// or this process was paused past its schedule: stop trusting
			// the lock now.
			l.lose(lostBecause(k.cause(l.Until(), now, lastErr)))
			return
		}
		if k.capped || now.Before(next) {
			continue // woke for a loss point that a manual Extend has moved
		}
		ttl, ok := k.capTTL(l, now)
		if !ok {
			k.capped = true
			continue
		}
		err := k.extendBefore(l, ttl, lossAt.Sub(now))
		switch {
		case err == nil:
			lastErr = nil
			k.capped = ttl < l.ttl // cut at the cap: the last one
			next = k.due(l.Until(), clk.Now())
		case k.ctx.Err() != nil:
			continue // stopped while extending; sleep returns
		case errors.Is(err, ErrNotHeld):
			l.lose(lostBecause(err))
			return
		default:
			// Nodes did not answer; try again soon, within the validity left.
			lastErr = err
			next = clk.Now().Add(max(k.every/8, time.Millisecond))
		}
	}
}

// extendBefore runs one extension of l to ttl that is over within left,
// the time to the loss point: an extension in flight must not delay the
// loss, and its node calls, which may run past the decision
// (fanout.CallBound), must not land after it either.
func (k *keeper) extendBefore(l *Lock, ttl, left time.Duration) error {
	timeout := min(k.timeout, left)
	if left >= fanout.CallBound(timeout) {
		return l.extend(k.ctx, ttl, timeout)
	}
	// The decision comes a little before the cut at the loss point, so
	// that nodes still silent then are reported as timed out
	// (ErrNodeTimeout), as at any other extension's node timeout.
	timeout = min(timeout, left-left/16)
	ctx, cancel := context.WithTimeoutCause(k.ctx, left, errLossPoint)
	defer cancel()
	return l.extend(ctx, ttl, timeout)
}

// errLossPoint is the cause of a keeper's extension cut at the loss point:
// the keeper's bound, not a caller's deadline (callerErr).
var errLossPoint = errors.New("redlock: the loss point came")

// callerErr is ctx's error unless ctx ended only at the keeper's loss
// point, which is not the caller's doing: the extension failed for want
// of answers, as when the node timeout cuts it.
func callerErr(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), errLossPoint) {
		return nil
	}
	return ctx.Err()
}

// sleep waits until at. It returns false, having ended the keeper, when
// the lock is unlocked or the Client closes first.
func (l *Lock) sleep(at time.Time) bool {
	k, clk := l.keeper, l.c.cfg.clock
	t := clk.NewTimer(at.Sub(clk.Now()))
	defer t.Stop()
	select {
	case <-k.stop:
		k.finish(errUnlocked, false)
		return false
	case <-l.c.life.closing:
		l.lose(lostBecause(ErrClosed))
		return false
	case <-t.C():
		return true
	}
}

// lossAt is when the keeper of a lock valid until until declares it lost:
// the loss margin before until, or before the cap when that comes first,
// and the slack before that.
func (k *keeper) lossAt(until time.Time) time.Time {
	if !k.capAt.IsZero() {
		until = minTime(until, k.capAt)
	}
	return until.Add(-k.guard - k.slack)
}

// cause says why a lock valid until until is lost at now: the cap, or the
// last extension's failure, if any.
func (k *keeper) cause(until, now time.Time, lastErr error) error {
	switch {
	case k.capReached(until):
		return k.capError()
	case lastErr != nil:
		return lastErr
	}
	return fmt.Errorf("validity runs out in %v and was not extended in time", until.Sub(now).Round(time.Millisecond))
}

// due is when the next extension of a lock valid until until is due, from
// now: after the interval, but no later than leaves it a full node timeout
// before the loss margin.
func (k *keeper) due(until, now time.Time) time.Time {
	return minTime(now.Add(k.every), until.Add(-k.guard-k.timeout))
}

// finish records why the lock ended and closes done.
func (k *keeper) finish(err error, lost bool) {
	k.err = err
	close(k.done)
	if lost && k.onLost != nil {
		k.onLost(err)
	}
}

// lossMargin is how long before Until() an auto-extended lock of ttl is
// declared lost, at the latest: enough for work to stop in time, and twice
// the node timeout, of which the last extension may use one.
func (c *Client) lossMargin(ttl time.Duration) time.Duration {
	return max(ttl/10, 2*c.nodeTimeout(ttl))
}

// lossSlack is how much earlier than the loss margin the keeper of a lock
// whose node timeout is timeout declares the loss: timer slack, and the
// return of an extension cut at that point, take up to a millisecond or so
// on a loaded machine. It comes out of the last extension's node timeout,
// never out of the margin, so that it changes no ttl checkKeepable accepts.
func lossSlack(timeout time.Duration) time.Duration {
	return min(timeout/4, 2*time.Millisecond)
}

// lostBecause is the loss error for cause: it wraps ErrLockLost and cause,
// and says "redlock: " once.
func lostBecause(cause error) error {
	return &lossError{cause: cause}
}

type lossError struct{ cause error }

func (e *lossError) Error() string { return ErrLockLost.Error() + ": " + unprefixed(e.cause) }

func (e *lossError) Unwrap() []error { return []error{ErrLockLost, e.cause} }

// lose ends the keeper with a loss and reports it to the observers.
func (l *Lock) lose(err error) {
	l.keeper.finish(err, true)
	now := l.c.cfg.clock.Now()
	l.c.emit(context.Background(), Event{Kind: Lost, Key: l.key, Start: now, Held: now.Sub(l.acquiredAt), Fence: l.fence, Err: err})
}

// errUnlocked is the Err of a lock ended by Unlock rather than lost.
var errUnlocked = fmt.Errorf("%w: unlocked", ErrNotHeld)

// capTTL is the TTL of the extension due at now: the lock's, or what is
// left to the cap when that is less. ok is false when such an extension
// would not move Until() later: the cap leaves nothing to add.
func (k *keeper) capTTL(l *Lock, now time.Time) (ttl time.Duration, ok bool) {
	if k.capAt.IsZero() {
		return l.ttl, true
	}
	left := k.capAt.Sub(now).Truncate(time.Millisecond) // Redis keeps milliseconds
	if left >= l.ttl {
		return l.ttl, true
	}
	if left < l.c.minTTL || !now.Add(left-l.c.drift(left)).After(l.Until()) {
		return 0, false
	}
	return left, true
}

// capReached reports whether the loss of a lock valid until until is the
// cap's doing: the keeper stopped extending for it, or the lock is valid
// up to the cap anyway (a manual Extend went past it).
func (k *keeper) capReached(until time.Time) bool {
	return k.capped || (!k.capAt.IsZero() && !until.Before(k.capAt))
}

// capError is the cause of a loss at the cap.
func (k *keeper) capError() error {
	return fmt.Errorf("%w: held for the maximum of %v", ErrMaxHold, k.maxHold)
}

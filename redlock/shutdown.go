package redlock

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Shutdown releases every lock this Client holds, then closes it as Close
// does. Call it when the process stops (on SIGTERM, once the work done under
// the locks has stopped): other processes then get the keys at once instead
// of after their TTL, which matters in a rolling deploy.
//
// In order, Shutdown refuses new acquisitions (they return ErrClosed), ends
// the waits of callers blocked in Lock (ErrClosed), stops auto-extensions
// (those locks report ErrLockLost and ErrClosed, and Do cancels fn's context
// with that cause), and waits for operations in flight; then it releases, in
// parallel and as Unlock does, every lock this Client handed out that has not
// been unlocked, including those obtained by calls that were in flight. A
// holder that keeps working after Shutdown began works without its lock:
// stop the work first. Unlock calls made while Shutdown runs may return
// ErrClosed; Shutdown releases those locks itself.
//
// Every release decides at the node timeout, even when ctx has ended (as
// in Unlock), and Close's bound follows, so Shutdown returns within a few
// times Close's (see Close); ctx's
// values reach the observers. It returns the errors of releases that did not
// reach a majority (ErrNotReleased), joined; a lock that had expired or
// passed to another owner is no error here. Calling Shutdown again, or Close
// after it, does nothing more. Shutdown after Close still releases the locks
// held.
func (c *Client) Shutdown(ctx context.Context) error {
	if c == nil {
		return errNilClient
	}
	if ctx == nil {
		ctx = context.Background() // as Unlock: the release must still happen
	}
	c.life.closeMu.Lock()
	defer c.life.closeMu.Unlock()
	c.life.draining.Store(true)
	c.stop() // no operation runs now, so the set of held locks is final
	locks := c.life.held.list()

	// Open again for the releases alone: acquisitions stay refused.
	c.life.mu.Lock()
	c.life.closed = false
	c.life.mu.Unlock()
	errs := make([]error, len(locks))
	var wg sync.WaitGroup
	for i, l := range locks {
		wg.Go(func() { errs[i] = l.Unlock(ctx) })
	}
	wg.Wait()
	c.stop()

	var failed []error
	for _, err := range errs {
		if err != nil && !errors.Is(err, ErrNotHeld) {
			failed = append(failed, err)
		}
	}
	return errors.Join(failed...)
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

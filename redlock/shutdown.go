package redlock

import (
	"context"
	"errors"
	"sync"
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

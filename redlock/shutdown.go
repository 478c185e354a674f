package redlock

import (
	"context"
	"errors"
	"sync"
)

// Shutdown releases every lock this Client holds, then closes it as Close
// does; call it when the process stops, once the work under the locks has
// stopped. It refuses new acquisitions and ends blocked ones (ErrClosed),
// stops auto-extensions (their locks report ErrLockLost and ErrClosed),
// waits for calls in flight, then releases every lock not yet unlocked, in
// parallel, each deciding at the node timeout even when ctx has ended. It
// returns the joined errors of releases that did not reach a majority
// (ErrNotReleased); a lock that had expired or passed on is no error.
// Calling it again, or Close after it, does nothing more; Shutdown after
// Close still releases the locks held.
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

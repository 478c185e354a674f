package redlock

import (
	"context"
	"time"
)

// TryDo is Do with one attempt, as TryLock makes it: when the lock on key
// is not obtained at once (another holder has it, or too few nodes agree),
// fn does not run and TryDo returns the error, which wraps ErrNotObtained
// (IsContended and IsUnavailable tell the two apart). Otherwise it is
// exactly Do: the lock is kept alive while fn runs, fn's context is
// canceled with a cause wrapping ErrLockLost if the lock is lost, and the
// lock is released when fn returns or panics.
//
// It suits work that must run once per period across replicas: each
// replica calls TryDo at the same hour, one runs fn, the others are told
// the key is held and move on without waiting. WithFairness makes it
// respect the queue of waiters, as for TryLock; a WithRetry option does
// nothing here.
func (c *Client) TryDo(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error, opts ...LockOption) error {
	return c.do(ctx, fn, opts, func(all []LockOption) (*Lock, error) { return c.TryLock(ctx, key, ttl, all...) })
}

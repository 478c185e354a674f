package redlock

import (
	"context"
	"time"
)

// TryDo is Do with one attempt, as TryLock makes it: when the lock on key
// is not obtained at once, fn does not run and TryDo returns the error,
// which wraps ErrNotObtained (IsContended tells a held key from too few
// nodes). Otherwise it is exactly Do. It suits work that one replica of
// many should run per period: the others are refused at once and move on.
// WithFairness applies as to TryLock; WithRetry does nothing here.
func (c *Client) TryDo(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error, opts ...LockOption) error {
	return c.do(ctx, fn, opts, func(all []LockOption) (*Lock, error) { return c.TryLock(ctx, key, ttl, all...) })
}

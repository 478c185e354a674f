package redlock

import (
	"context"
	"time"
)

// Resume carries on with the exclusive lock on key that token, from
// Lock.Token(), still holds: after a restart, or in another process. It
// takes no new hold: where key holds token it extends the key to ttl (never
// shortening it) and writes nothing elsewhere, and it returns a Lock, valid
// from the call's start, only when a majority did. Both Locks act on the
// same hold. On failure the error wraps ErrNotHeld (token no longer holds
// key on a majority, or is no exclusive lock's token), ErrWrongKind or
// ErrNotExtended, and ctx.Err() when ctx ended the call. Options apply as
// to Lock, but for WithRetry and WithFairness; readers, permits,
// multi-locks and an owner's holds cannot be resumed. See docs/usage.md,
// "Carrying on with a hold: Resume".
func (c *Client) Resume(ctx context.Context, key, token string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: resumeKind, key: key, token: token, ttl: ttl, opts: opts})
}

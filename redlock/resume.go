package redlock

import (
	"context"
	"time"
)

// Resume carries on with the exclusive lock on key that token still holds:
// a token from Lock.Token(), kept by a process that restarted or handed to
// another (redlock run gives its command REDLOCK_TOKEN). It takes no new
// hold: on every node where key holds token it extends the key to ttl,
// never shortening its TTL, and writes nothing elsewhere. It returns a
// Lock, valid from the start of the call for ttl less the drift allowance,
// only when a majority did. Both Locks act on the same hold: whichever
// unlocks first releases it.
//
// On failure the error wraps ErrNotHeld (token no longer holds key on a
// majority, or is not an exclusive lock's token) or ErrNotExtended (nodes
// did not answer in time), and ctx.Err() when ctx ended the call; a key
// that holds another kind is reported as ErrWrongKind. WithFencing gives
// the resumed Lock a fence greater than the hold's own; WithAutoExtend and
// WithRepairOnExtend apply as to Extend; WithRetry and WithFairness do not. Readers,
// permits, multi-locks and an owner's holds cannot be resumed. See
// docs/usage.md, "Carrying on with a hold: Resume".
func (c *Client) Resume(ctx context.Context, key, token string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: resumeKind, key: key, token: token, ttl: ttl, opts: opts})
}

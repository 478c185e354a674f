package redlock

import (
	"context"
	"time"
)

// Resume carries on with the exclusive lock on key that token still holds:
// a token from Lock.Token(), kept by a process that restarted or handed to
// another process (redlock run gives its command REDLOCK_TOKEN). It takes no
// new hold: on every node where key holds token it sets the TTL to ttl, or
// keeps the key's own where that is longer (Extend's compare-and-pexpire),
// and it returns a Lock, valid from the start of the call for ttl less the
// drift allowance, only when a majority did. Where key is gone or holds
// another token nothing is written, so Resume never creates a hold that was
// not there; WithRepairOnExtend may then set the key again on the nodes that lost it,
// as Extend does, once the majority confirmed. With WithFencing the resumed
// Lock gets a new fence, greater than the hold's own and every earlier one
// (the two phases of a fenced acquisition, on the nodes that hold the
// token): the hold's first fence cannot be read back exactly (a failed
// attempt may have raised a counter on a minority), and a greater one is
// always safe; a resource then takes the resumer's writes and refuses the
// first handle's. WithAutoExtend keeps it alive; WithRetry and WithFairness
// do not apply.
//
// Neither Resume nor any extension through either handle shortens the
// key's TTL on a node: the other handle may count on all of it. A shorter
// ttl is accepted rather than refused, since refusing it at Resume would
// not do: each handle goes on extending on its own schedule with its own
// ttl, and only an extension that keeps the longer of the two keeps every
// handle's Until() true. The cost is availability only: the hold lasts on
// the nodes as long as the longest of its handles asked.
//
// On failure the error wraps ErrNotHeld (the token does not hold key on a
// majority any more) or ErrNotExtended (nodes did not answer in time), and
// ctx.Err() when ctx ended the call. A token that is not an exclusive
// lock's is refused: a multi-lock's at once, with ErrWrongKind and no node
// called; on a key that holds permits or a key of the application's, the
// node that refused names it with ErrWrongKind (as TryLock's does); on a
// key held by readers, ErrNotHeld. The nodes extend only a value that has
// an exclusive lock's form (what Lock.Token returns), checked in the same
// script step that reads it: the readers' marker ("r:readers") or a value
// of the application's, given as the token, is refused with ErrNotHeld and
// left untouched. Both Locks, the original and the resumed one, act on
// the same hold: whichever unlocks first releases it.
//
// Readers, permits, multi-locks and an owner's holds (WithOwner) cannot be
// resumed yet: a reader's, a permit's and an owner's hold is one lease
// among several on the key, and a permit's also needs its slot; see
// docs/design.md.
func (c *Client) Resume(ctx context.Context, key, token string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, request{kind: resumeKind, key: key, token: token, ttl: ttl, opts: opts})
}

package redlock

import "errors"

// Re-entry: a hold named after its owner. Go has no goroutine identity, so
// the caller names the owner (a job id, a request id) with WithOwner, and
// a Lock, TryLock or Do by an owner that holds the key already adds a hold
// to the owner's instead of being refused. The key then holds the owner's
// value ('o:' + owner) and a hash next to it (keyspace.Standalone.Holds) each hold's
// expiry; the scripts (internal/scripts/owned_*.lua) check and change both
// in one step. An owner's lock is its own kind (owned), chosen once when
// the call starts: the plain exclusive kind does not look at owners.

// WithOwner names the owner of the hold that Lock, TryLock or Do takes (a
// job id, a request id: a goroutine has no identity to use). A call by an
// owner that holds the key already re-enters it: it gets a hold of its own
// (its own Token, Until, Extend and Unlock), and the key stays held until
// every hold of the owner was given back or ran out. Anyone else, a plain
// Lock or TryLock included, is refused while the owner holds the key.
//
// A re-entry is a compare-and-extend granted only where a majority still
// holds the owner's value, valid from the start of the call; it never
// re-creates an expired hold. An Unlock gives back exactly its own hold.
// With WithFencing every hold of an owner reports the owner's one fence.
// The owner's Lock does not join the key's queue: it retries on the
// WithRetry schedule and is woken by a release. WithFairness and WithRepairOnExtend
// cannot be combined with WithOwner, and readers, permits, multi-locks and
// Resume take no owner; an empty owner is an error too. See docs/usage.md,
// "Re-entering a hold: WithOwner".
func WithOwner(owner string) LockOption {
	return func(c *lockConfig) {
		if owner == "" {
			c.err = errors.New("redlock: empty owner")
			return
		}
		c.owner = owner
	}
}

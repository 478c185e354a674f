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
// job id, a request id: a goroutine has no identity). A call by an owner
// that holds the key already re-enters it with a hold of its own (its own
// Token, Until, Extend and Unlock); the key stays held until every hold was
// given back or ran out, and everyone else is refused meanwhile. A
// re-entry is granted only where a majority still holds the owner's value;
// all of an owner's holds share one fence. It cannot be combined with
// WithFairness or WithRepairOnExtend, nor given to readers, permits, multi-locks or
// Resume; an empty owner is an error. See docs/usage.md, "Re-entering a
// hold: WithOwner".
func WithOwner(owner string) LockOption {
	return func(c *lockConfig) {
		if owner == "" {
			c.err = errors.New("redlock: empty owner")
			return
		}
		c.owner = owner
	}
}

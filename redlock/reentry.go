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

// WithOwner names the owner of the hold that Lock, TryLock or Do takes: a
// job id, a request id, anything that says "the same logical holder" across
// the call stack (a goroutine has no identity to use). A call by an owner
// that holds the key already re-enters it: it gets a hold of its own (its
// own Token, Until, Extend and Unlock), counted with the owner's other
// holds on the nodes, and the key stays held until every hold was given
// back or ran out. A call by anyone else is refused while the owner holds
// the key, as for a plain lock; so is a plain Lock or TryLock.
//
// A hold is taken, by its own attempt, on the nodes where the key is free
// or holds the owner's value, and the attempt holds when a majority agrees
// on one of the two: all took it free (the owner's first hold), or all
// added to the owner's (a re-entry). A re-entry is therefore made only
// where the owner's earlier hold is still on a majority: it is a
// compare-and-extend, valid from the start of the call for ttl less the
// drift allowance, which never creates the owner's value on a node that
// lost it, and a mixed answer is refused unless the key is free on a
// majority (then it is a first hold, counted alone). The key's TTL on a
// node is the latest of the live holds' expiries there: a hold's Extend
// moves only its own, an Unlock gives back exactly its own hold (sent
// twice, it gives back nothing more), and a hold that ran out counts for
// nothing. With WithFencing every hold of an owner reports the owner's one
// fence, recorded with its first fenced hold.
//
// The owner's Lock and TryLock do not join the key's queue of waiters:
// they retry on the WithRetry schedule and are woken by an Unlock that
// frees the key, as LockAll is; WithFairness and WithRepairOnExtend cannot be
// combined with WithOwner (an error). The last hold's Unlock releases the
// key as a plain Unlock does: it hands it to the first queued waiter, or
// wakes the watchers. Status reports the owner's value as the Token.
// Readers, permits, multi-locks and Resume take no owner (an error): see
// docs/design.md.
//
// An empty owner is an error.
func WithOwner(owner string) LockOption {
	return func(c *lockConfig) {
		if owner == "" {
			c.err = errors.New("redlock: empty owner")
			return
		}
		c.owner = owner
	}
}

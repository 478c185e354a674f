package redlock

import (
	"fmt"
	"time"
)

// WithMaxHold caps how long a lock kept alive by auto-extension
// (WithAutoExtend, and always in Do and DoAll) is held: d counted from the
// moment the lock call obtained it. The keeper never extends the lock past
// that point: the extension due when less than a TTL is left to it asks
// for only what is left, and is the last. The lock is then lost as any
// kept lock whose extensions stop: at the latest the loss margin before
// its validity ends (see WithAutoExtend), which is before the cap; Done
// closes, and Err, like the cause of Do's context, wraps ErrLockLost and
// ErrMaxHold ("redlock: lock lost: maximum hold reached: held for the
// maximum of 1m0s"). Its keys expire on the nodes by the cap, give or take
// the flight of that last extension (at most a node timeout), unless
// Unlock releases them first. It applies to every kind that auto-extends:
// Lock and TryLock, RLock and TryRLock, AcquirePermit and TryAcquirePermit,
// LockAll and TryLockAll, Do and DoAll.
//
// The cap bounds what the keeper does, so that a forgotten Unlock is not
// renewed for days; a manual Extend is the caller's and is not cut, but a
// keeper still declares the lock lost at the cap's loss point. d = 0 (the
// default) sets no cap, which undoes one set by WithDefaultLockOptions.
// A negative d, or one shorter than the lock's TTL (the first TTL alone
// would hold the lock past it), makes the lock call return an error
// without calling a node.
func WithMaxHold(d time.Duration) LockOption {
	return func(c *lockConfig) {
		if d < 0 {
			c.err = fmt.Errorf("redlock: max hold must not be negative, got %v", d)
			return
		}
		c.maxHold = d
	}
}

// checkMaxHold refuses a cap shorter than ttl: the lock would be held past
// it from the start, whatever the keeper does.
func (c *Client) checkMaxHold(ttl time.Duration, lc lockConfig) error {
	if lc.maxHold == 0 || lc.maxHold >= ttl {
		return nil
	}
	return fmt.Errorf("redlock: max hold %v is shorter than the ttl %v: the lock would be held past it "+
		"before any extension; use a max hold of at least the ttl, or a shorter ttl", lc.maxHold, ttl)
}

// capTTL is the TTL of the extension due at now: the lock's, or what is
// left to the cap when that is less. ok is false when such an extension
// would not move Until() later: the cap leaves nothing to add.
func (k *keeper) capTTL(l *Lock, now time.Time) (ttl time.Duration, ok bool) {
	if k.capAt.IsZero() {
		return l.ttl, true
	}
	left := k.capAt.Sub(now).Truncate(time.Millisecond) // Redis keeps milliseconds
	if left >= l.ttl {
		return l.ttl, true
	}
	if left < l.c.minTTL || !now.Add(left-l.c.drift(left)).After(l.Until()) {
		return 0, false
	}
	return left, true
}

// capReached reports whether the loss of a lock valid until until is the
// cap's doing: the keeper stopped extending for it, or the lock is valid
// up to the cap anyway (a manual Extend went past it).
func (k *keeper) capReached(until time.Time) bool {
	return k.capped || (!k.capAt.IsZero() && !until.Before(k.capAt))
}

// capError is the cause of a loss at the cap.
func (k *keeper) capError() error {
	return fmt.Errorf("%w: held for the maximum of %v", ErrMaxHold, k.maxHold)
}

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

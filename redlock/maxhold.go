package redlock

import (
	"fmt"
	"time"
)

// WithMaxHold caps how long a lock kept alive by auto-extension
// (WithAutoExtend, and always in Do and DoAll) is held: d from the moment
// the lock call obtained it. The keeper never extends past the cap, so the
// keys expire there unless Unlock releases them first; the lock is
// declared lost the loss margin before (see WithAutoExtend), and Err, like
// the cause of Do's context, wraps ErrLockLost and ErrMaxHold. A manual
// Extend is not cut. It applies to every kind that auto-extends.
//
// d = 0 (the default) sets no cap, which undoes one set by
// WithDefaultLockOptions. A negative d, or one shorter than the lock's
// TTL, makes the lock call return an error without calling a node.
func WithMaxHold(d time.Duration) LockOption {
	return func(c *lockConfig) {
		if d < 0 {
			c.err = fmt.Errorf("redlock: max hold must not be negative, got %v", d)
			return
		}
		c.maxHold = d
	}
}

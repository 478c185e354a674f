package redlock

import "github.com/redlockgo/redlock/internal/node"

// WithFencing makes the acquisition produce a fencing token, Lock.Fence():
// a number strictly greater than the fence of every earlier successful
// fenced acquisition of the same key, as long as a majority of nodes keep
// their data and the other assumptions of the lock hold. A resource that
// accepts a write only with a fence at least as high as the highest it has
// seen rejects a holder whose lease ran out while it was paused.
//
// It costs one more round to the nodes; the lock is returned only after
// it, within validity, and a failed attempt's fence is never handed out.
// The counter is a companion key without TTL (docs/design.md, "Key
// names"). See docs/fencing.md.
func WithFencing() LockOption {
	return func(c *lockConfig) { c.fencing = true }
}

// fenceKey returns the Redis key of the fence counter of the lock key, as
// WithFencing documents it.
func fenceKey(key string) string { return node.FenceKey(key) }

// Fence returns the lock's fencing token, or 0 for a lock taken without
// WithFencing (and for a nil Lock).
func (l *Lock) Fence() uint64 {
	if l == nil {
		return 0
	}
	return l.fence
}

package redlock

import "time"

// WithLockDelay turns on the lock-delay: after a lock on a key expired
// without a release (its holder vanished: crashed, paused, cut off), a new
// acquisition of that key waits d before it gets it. A holder that may
// still be acting on the resource after its lease ran out (a long GC pause,
// a partition) thus has d more to notice and stop before anyone else
// starts. A lock released by Unlock passes on at once, as without the
// option. It is off by default; d must be between 1ms and MaxTTL, in whole
// milliseconds.
//
// The contract. With the option on, an acquisition of key on a node also
// sets a marker next to the key ("<key>:held", or its Redis Cluster
// companion in the key's slot) that names the holder and outlives the key by
// d; Extend refreshes it, Unlock (and a hand-off to a waiter) deletes it or
// gives it to the next holder. A node where the marker names another token
// while the key is gone refuses the key until the marker expires, with a
// NodeError wrapping ErrLockDelay that names the time left. So TryLock
// fails with ErrNotObtained (and ErrLockDelay on the refusing nodes) for up
// to ttl+d after the vanished holder's acquisition; Lock keeps waiting and
// takes the key within its retry strategy's longest delay after the delay
// ends, or returns when ctx ends.
//
// The delay is kept on the nodes, so every client of a key must use the
// same setting: a Client without the option neither honours another's
// delay nor sets the marker, and one with a different d sets a different
// one. It covers every kind: locks (TryLock, Lock, Do), multi-locks (each
// key's marker), readers (a vanished reader keeps writers out for d after
// its expiry, and a vanished writer keeps readers out) and permits (a
// vanished permit's slot stays taken for d after its expiry). It only adds
// refusals: no lock is granted that would not be granted without it.
func WithLockDelay(d time.Duration) Option {
	return func(c *config) {
		if d < time.Millisecond || d > MaxTTL {
			c.fail("lock delay must be between 1ms and %v, got %v", MaxTTL, d)
			return
		}
		c.lockDelay = d.Truncate(time.Millisecond)
	}
}

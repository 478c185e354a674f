package redlock

import (
	"context"
	"fmt"
	"time"

	"github.com/redlockgo/redlock/internal/scripts"
)

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

// withHeld returns keys with key's holder marker on node i appended when
// the lock-delay is on, and keys unchanged otherwise.
func (c *Client) withHeld(keys []string, i int, key string) []string {
	if c.cfg.lockDelay == 0 {
		return keys
	}
	return append(keys, c.heldKey(i, key))
}

// withDelay returns args with the lock-delay in ms appended when it is on,
// and args unchanged otherwise.
func (c *Client) withDelay(args []any) []any {
	if c.cfg.lockDelay == 0 {
		return args
	}
	return append(args, c.cfg.lockDelay.Milliseconds())
}

// setDelayed is the lock-delay's SET NX PX on node i: it sets key and its
// holder marker, or refuses with an error wrapping ErrLockDelay.
func (c *Client) setDelayed(ctx context.Context, i int, key, token string, ttl time.Duration) (bool, error) {
	r, err := c.nodes.Pool(i).Eval(ctx, scripts.AcquireDelay, []string{key, c.heldKey(i, key)},
		token, ttl.Milliseconds(), c.cfg.lockDelay.Milliseconds())
	if err != nil {
		return false, err
	}
	arr, _ := r.([]any)
	if len(arr) == 0 {
		return false, errMalformed
	}
	switch asInt(arr[0]) {
	case scripts.AcquireSet:
		return true, nil
	case scripts.AcquireHeld:
		return false, nil
	}
	return false, delayedReply(arr)
}

// delayedReply is the error of a script's reply {AcquireDelayed, pttl}.
func delayedReply(arr []any) error {
	if len(arr) < 2 || asInt(arr[0]) != scripts.AcquireDelayed {
		return errMalformed
	}
	return delayError(time.Duration(max(asInt(arr[1]), 0)) * time.Millisecond)
}

// delayError is the per-node cause of a refusal for the lock-delay, left
// being how much of it remains.
func delayError(left time.Duration) error {
	return fmt.Errorf("%w: %v left", ErrLockDelay, left)
}

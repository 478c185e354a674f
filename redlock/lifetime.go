package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// WithAutoExtend keeps the lock alive in the background until Unlock,
// extending it to its full TTL every interval (0 means ttl/3; negative is
// an error). When the lock can no longer be guaranteed it closes Done and
// sets Err to an error wrapping ErrLockLost, at the latest the loss margin,
// max(ttl/10, 2×node timeout), before Until() (at once for a lock returned
// with less than that left, as after a long wait). A lock call refuses, without
// calling a node, a ttl too short for that margin plus a node timeout (with
// the defaults, under 6ms). The goroutine belongs to the Lock: Unlock stops
// it, and Client.Close and Shutdown too (the lock is then lost with
// ErrClosed). Without WithMaxHold it renews the lock as long as the process
// lives. See docs/usage.md, "Behaviour you can rely on".
func WithAutoExtend(interval time.Duration) LockOption {
	return func(c *lockConfig) {
		if interval < 0 {
			c.err = fmt.Errorf("redlock: auto-extend interval must not be negative, got %v", interval)
			return
		}
		c.autoExtend = true
		c.extendEvery = interval
	}
}

// onLost registers a callback run once, in the keeper goroutine, when the
// lock is lost. Do uses it to cancel fn's context with the cause.
func onLost(fn func(error)) LockOption {
	return func(c *lockConfig) { c.onLost = fn }
}

// Done returns a channel closed when a lock taken WithAutoExtend is lost or
// unlocked. For a lock without auto-extension it returns nil (never ready):
// check Until() instead.
func (l *Lock) Done() <-chan struct{} {
	if l == nil || l.keeper == nil {
		return nil
	}
	return l.keeper.done
}

// Err returns nil while the lock is held. After Done is closed it returns why:
// an error wrapping ErrLockLost (with the per-node detail of the failed
// extension) when the lock was lost, or one wrapping ErrNotHeld after Unlock.
// A lock without auto-extension always returns nil.
func (l *Lock) Err() error {
	if l == nil || l.keeper == nil {
		return nil
	}
	select {
	case <-l.keeper.done:
		return l.keeper.err
	default:
		return nil
	}
}

// Do takes the lock on key as Lock does, runs fn while keeping the lock
// alive (WithAutoExtend), and releases it when fn returns or panics; a
// panic is re-raised after the release. fn's context is derived from ctx,
// and is canceled with a cause wrapping ErrLockLost (context.Cause) when the
// lock can no longer be guaranteed, at the latest the loss margin before
// Until(): fn must stop touching the resource then, and fencing tokens
// guard writes already on their way. Do returns the acquisition error if
// the lock was not obtained; otherwise fn's error joined with the loss or
// with the release error, the loss reported once.
func (c *Client) Do(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error, opts ...LockOption) error {
	return c.do(ctx, fn, opts, func(all []LockOption) (*Lock, error) { return c.Lock(ctx, key, ttl, all...) })
}

// do is Do with the acquisition given: lock takes the lock with the
// options Do adds to opts.
func (c *Client) do(ctx context.Context, fn func(ctx context.Context) error, opts []LockOption, lock func([]LockOption) (*Lock, error)) (err error) {
	if fn == nil {
		return errors.New("redlock: nil function")
	}
	if ctx == nil {
		return errors.New("redlock: nil context")
	}
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	all := append([]LockOption{WithAutoExtend(0)}, opts...)
	all = append(all, forceAutoExtend, onLost(cancel))
	l, err := lock(all)
	if err != nil {
		return err
	}
	defer func() {
		r := recover()
		unlockErr := l.Unlock(context.WithoutCancel(ctx))
		lost := l.Err()
		if lost == nil || !errors.Is(lost, ErrLockLost) {
			lost = unlockErr
		}
		if r != nil {
			panic(r)
		}
		if !errors.Is(err, lost) { // fn may have returned the cause already
			err = errors.Join(err, lost)
		}
	}()
	return fn(fctx)
}

// forceAutoExtend turns auto-extension on whatever the options said: Do
// cannot keep its promise without it.
func forceAutoExtend(c *lockConfig) { c.autoExtend = true }

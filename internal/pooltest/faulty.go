// Package pooltest wraps a pool.Pool to inject faults in unit tests: errors,
// a node that never answers, a node whose command lands late, and a gate that
// holds calls until the test opens it.
package pooltest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/pool"
)

// Faulty is a pool.Pool that forwards to an inner Pool, with faults the test
// switches on and off. The zero faults forward every call unchanged.
type Faulty struct {
	pool.Pool

	mu     sync.Mutex
	err    error         // returned instead of calling the inner pool
	hang   bool          // never answer; return when ctx ends
	gate   chan struct{} // calls wait here (ignoring ctx), then run
	before func(op string)

	calls atomic.Int64
	muted atomic.Bool
}

// Wrap returns a Faulty around p.
func Wrap(p pool.Pool) *Faulty { return &Faulty{Pool: p} }

// Fail makes every call return err without reaching the node (nil heals).
func (f *Faulty) Fail(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

// Hang makes every call block until its context ends, as a blackholed node.
func (f *Faulty) Hang(on bool) {
	f.mu.Lock()
	f.hang = on
	f.mu.Unlock()
}

// Hold makes calls wait, regardless of their context, until the returned
// function is called; then each runs on the node with a background context
// and answers ctx.Err() if its context has ended meanwhile. This is a command
// that lands on the node after its caller stopped waiting.
func (f *Faulty) Hold() (release func()) {
	ch := make(chan struct{})
	f.mu.Lock()
	f.gate = ch
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			if f.gate == ch {
				f.gate = nil
			}
			f.mu.Unlock()
			close(ch)
		})
	}
}

// Before sets a hook run at the start of every call with "setnx" or "eval".
func (f *Faulty) Before(fn func(op string)) {
	f.mu.Lock()
	f.before = fn
	f.mu.Unlock()
}

// Calls returns how many calls reached the wrapper.
func (f *Faulty) Calls() int64 { return f.calls.Load() }

// do applies the faults around run.
func do[T any](ctx context.Context, f *Faulty, op string, run func(context.Context) (T, error)) (T, error) {
	f.calls.Add(1)
	f.mu.Lock()
	err, hang, gate, before := f.err, f.hang, f.gate, f.before
	f.mu.Unlock()
	var zero T
	if before != nil {
		before(op)
	}
	switch {
	case err != nil:
		return zero, err
	case hang:
		<-ctx.Done()
		return zero, ctx.Err()
	case gate != nil:
		<-gate
		v, err := run(context.Background())
		if ctx.Err() != nil {
			return zero, ctx.Err()
		}
		return v, err
	}
	return run(ctx)
}

// SetNX forwards to the inner pool, faults permitting.
func (f *Faulty) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return do(ctx, f, "setnx", func(ctx context.Context) (bool, error) {
		return f.Pool.SetNX(ctx, key, value, ttl)
	})
}

// Eval forwards to the inner pool, faults permitting.
func (f *Faulty) Eval(ctx context.Context, s *pool.Script, keys []string, args ...any) (any, error) {
	return do(ctx, f, "eval", func(ctx context.Context) (any, error) {
		return f.Pool.Eval(ctx, s, keys, args...)
	})
}

// Listen forwards to the inner pool's pool.Notifier, if it has one. The
// faults do not apply to subscriptions; Mute drops their messages.
func (f *Faulty) Listen(ctx context.Context) (pool.Listener, error) {
	n, ok := f.Pool.(pool.Notifier)
	if !ok {
		return nil, errors.New("pooltest: inner pool has no notifications")
	}
	inner, err := n.Listen(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan pool.Message, 64)
	go func() {
		defer close(out)
		for m := range inner.Messages() {
			if !f.muted.Load() {
				out <- m
			}
		}
	}()
	return &listener{Listener: inner, out: out}, nil
}

// Mute drops (true) or delivers (false) the messages of the node's
// subscriptions: a lost notification.
func (f *Faulty) Mute(on bool) { f.muted.Store(on) }

type listener struct {
	pool.Listener
	out chan pool.Message
}

func (l *listener) Messages() <-chan pool.Message { return l.out }

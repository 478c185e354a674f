package redlock

import (
	"context"
	"errors"
	"time"
)

// Lead campaigns in election with value as Campaign does, runs fn as the
// leader, and resigns when fn returns or panics (a panic is re-raised
// after the resignation); the next campaigner then leads at once. fn's
// context is derived from ctx and is canceled with a cause wrapping
// ErrLockLost when the leadership is lost, at the latest the loss margin
// before its validity ends: fn must stop acting as the leader then. Lead
// returns Campaign's error if the caller never led; otherwise fn's error
// joined with the loss or with Resign's error, the loss reported once. A
// nil fn is an error, before any campaign.
func (c *Client) Lead(ctx context.Context, election, value string, ttl time.Duration, fn func(ctx context.Context) error) (err error) {
	if fn == nil {
		return errors.New("redlock: nil function")
	}
	ls, err := c.Campaign(ctx, election, value, ttl)
	if err != nil {
		return err
	}
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	lctx := ls.Context()
	stop := context.AfterFunc(lctx, func() { cancel(context.Cause(lctx)) })
	defer stop()
	defer func() {
		r := recover()
		resignErr := ls.Resign(context.WithoutCancel(ctx))
		lost := ls.Err()
		cancel(lost) // fn's context ends with the leadership, for what fn left running
		if !errors.Is(lost, ErrLockLost) {
			lost = resignErr
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

// Context returns a context that ends when the leadership ends: on its
// loss, on Resign, or when the Client closes. Its cause (context.Cause) is
// then Err's: an error wrapping ErrLockLost when the leadership was lost
// (and ErrClosed when the Client closed), or one wrapping ErrNotHeld after
// Resign. Its Err is context.Canceled; it has no deadline: act as the
// leader only before Until, or fence with Term.
//
// Every call returns the same context. The first starts one goroutine that
// waits for Done; the end of the leadership ends it, and Close waits for
// it. For a nil Leadership the context has already ended, with a cause
// wrapping ErrNotHeld.
func (ls *Leadership) Context() context.Context {
	if ls == nil {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(errNilLeadership)
		return ctx
	}
	ls.ctxOnce.Do(ls.startContext)
	return ls.ctx
}

// startContext makes ls.ctx and cancels it, with Err as its cause, once
// Done is closed.
func (ls *Leadership) startContext() {
	ctx, cancel := context.WithCancelCause(context.Background())
	ls.ctx = ctx
	select {
	case <-ls.Done():
		cancel(ls.Err())
		return
	default:
	}
	done, err := ls.c.begin()
	if err != nil {
		// The Client is closing: its Close is ending the keeper, which
		// closes Done, but no longer counts new goroutines.
		done = func() {}
	}
	go func() {
		defer done()
		<-ls.Done()
		cancel(ls.Err())
	}()
}

package redlock

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redlockgo/redlock/internal/fanout"
	"github.com/redlockgo/redlock/internal/lease"
)

// claim is what a strategy won: a token that holds the lock's key on a
// majority, and what hold needs to make it the caller's lock.
type claim struct {
	// until is the end of the validity the strategy measured: an
	// attempt's start plus the TTL less the drift; a waiter's grants'; a
	// resumed hold's call start plus the TTL (the extension decides).
	until time.Time
	// extend proves the hold first, by an extension that a majority
	// confirms (a resumed hold; a waiter's grants, confirmGrants).
	extend bool
	// votes and takes are the nodes whose take read a fence counter, and
	// the counters (phase 1 of fencing, done by an attempt's take); nil
	// takes: read them now, where the key holds the token.
	votes fanout.Result
	takes []lease.Take
}

// hold makes l, whose token holds its key on a majority, the caller's
// lock: valid until cl.until (or the extension's validity, with
// cl.extend), fenced when lc asks for it, and still valid after both. It
// is the one way to a hold of every strategy. It reports false with a nil
// error when the validity is used up; its error is the extension's or the
// fence's.
func (c *Client) hold(ctx context.Context, l *Lock, cl claim, lc lockConfig) (bool, error) {
	l.setUntil(cl.until)
	if cl.extend {
		if err := l.extendOnce(ctx, l.ttl, c.nodeTimeout(l.ttl)); err != nil {
			return false, err
		}
	}
	if !c.cfg.clock.Now().Before(l.Until()) {
		return false, nil
	}
	if !lc.fencing {
		return true, nil
	}
	fence, err := c.fence(ctx, l, cl)
	if err != nil {
		return false, err
	}
	l.fence = fence
	return c.cfg.clock.Now().Before(l.Until()), nil
}

// fence gives l its fencing token: phase 1 (the counters of a majority,
// read by the take, or now on the nodes where the key holds l's token,
// where nobody else can raise them meanwhile), then phase 2 (raiseFence).
func (c *Client) fence(ctx context.Context, l *Lock, cl claim) (uint64, error) {
	votes, takes := cl.votes, cl.takes
	if takes == nil {
		var err error
		if votes, takes, err = c.readFences(ctx, l); err != nil {
			return 0, err
		}
	}
	return c.raiseFence(ctx, l, votes, takes)
}

// raiseFence is phase 2: pick max+1 over the counters read by the nodes
// that said yes before the decision, and raise the counter to it on a
// majority where the key still holds our token.
func (c *Client) raiseFence(ctx context.Context, l *Lock, res fanout.Result, takes []lease.Take) (uint64, error) {
	var top uint64
	for _, v := range res.Votes {
		if v.OK {
			top = max(top, takes[v.Node].Counter)
		}
	}
	if top == math.MaxUint64 {
		return 0, fmt.Errorf("%w: the fence counter of %q is exhausted", ErrNotObtained, l.key)
	}
	fence := top + 1
	arg := strconv.FormatUint(fence, 10)
	res2 := c.onHolders(ctx, l, func(ctx context.Context, i int) (bool, error) {
		return l.kind.RaiseFence(ctx, &c.env, i, l.token, arg)
	})
	if !res2.Reached {
		return 0, c.fenceError(res2, "fence not recorded at a majority")
	}
	return fence, nil
}

// readFences reads the fence counter of l's key on every node where the
// key holds l's token (an exclusive lock's), and returns the votes and
// counters once a majority answered; otherwise an error wrapping
// ErrNotObtained.
func (c *Client) readFences(ctx context.Context, l *Lock) (fanout.Result, []lease.Take, error) {
	takes := make([]lease.Take, c.nodes.Len())
	res := c.onHolders(ctx, l, func(ctx context.Context, i int) (bool, error) {
		return l.ex.ReadFence(ctx, &c.env, i, l.token, &takes[i])
	})
	if !res.Reached {
		return res, nil, c.fenceError(res, "fence counters not read at a majority")
	}
	return res, takes, nil
}

// onHolders decides op, a call that counts only where l's token holds
// its key, on every node in the Client's order of l's calls.
func (c *Client) onHolders(ctx context.Context, l *Lock, op func(ctx context.Context, i int) (bool, error)) fanout.Result {
	slots := c.nodes.TakeAll(l.key, l.token, false, nil)
	return c.decide(ctx, l.key, c.nodeTimeout(l.ttl), 0,
		func(ctx context.Context, i int) (bool, error) {
			return slots[i].Run(ctx, func(ctx context.Context) (bool, error) { return op(ctx, i) })
		}, nil, nil)
}

// fenceError is the error of a fence phase that res did not decide.
func (c *Client) fenceError(res fanout.Result, reason string) error {
	qe := c.quorumError("lock", ErrNotObtained, res)
	qe.Reason = reason
	return qe
}

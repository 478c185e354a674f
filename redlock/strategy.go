package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/redlockgo/redlock/internal/fanout"
	"github.com/redlockgo/redlock/internal/lease"
	"github.com/redlockgo/redlock/internal/wait"
)

// The strategies: what an acquisition does until it holds, chosen once by
// prepare (plan.how). Each returns the lock, the number of attempts (a
// waiter's rounds after its first attempt count as retries), and the
// error; every way to a hold passes hold (hold.go).
//
//	how       entry points                                   waits by
//	tryOnce   TryLock, TryRLock, TryAcquirePermit,           up to two more attempts
//	          TryLockAll, an owner's TryLock                 to settle a split (split.go)
//	retrying  RLock, AcquirePermit, LockAll, an owner's Lock attempts paced by the retry
//	                                                         strategy, woken by releases
//	queued    Lock, a fair TryLock                           the nodes' queues (queue.go)
//	resumed   Resume                                         nothing: one extension
func (c *Client) run(ctx context.Context, p *plan) (*Lock, int, error) {
	switch p.how {
	case retrying:
		return c.retry(ctx, p)
	case queued:
		return c.queue(ctx, p)
	case resumed:
		return c.resume(ctx, p)
	}
	return c.try(ctx, p)
}

// try is one attempt, and up to two more while its refusal may be a split
// among simultaneous contenders (settleSplit). SET NX cannot tell a lock
// from a key of another kind, so a refused exclusive lock asks one node
// that refused what the key holds (nameKind).
func (c *Client) try(ctx context.Context, p *plan) (*Lock, int, error) {
	var l *Lock
	attempts, err := c.settleSplit(ctx, c.nodeTimeout(p.lc.ttl), func() (err error) {
		l, err = c.attempt(ctx, p, nil)
		return err
	})
	if err != nil && p.kind == nil {
		err = c.nameKind(ctx, p.key, err)
	}
	err, _ = afterAttempt(ctx, err, nil, false)
	return l, attempts, err
}

// retry is attempts paced by the retry strategy and cut short by a release
// of a watched key (wait.Hub.Retry) until one succeeds, the strategy stops,
// ctx ends, the Client closes or a node says the key holds another kind
// (ErrWrongKind: no retry can succeed).
func (c *Client) retry(ctx context.Context, p *plan) (*Lock, int, error) {
	var l *Lock
	var prev error // the error of the last attempt that ran to its decision
	told := false  // the wait for the restart quarantine was logged (outlast.go)
	attempts, err := c.waits.Retry(ctx, p.kind.Watched(), p.lc.retry, c.nodeTimeout(p.lc.ttl), queueBeat(p), func(ctx context.Context, w *wait.Watch, retry bool) (error, bool) {
		var err error
		l, err = c.attempt(ctx, p, w)
		err, end := afterAttempt(ctx, err, prev, retry)
		prev = err
		if !end {
			if q := c.outlasted(ctx, p.key, err, &told); q != nil {
				return q, true
			}
		}
		return err, end || errors.Is(err, ErrWrongKind)
	})
	c.leaveQueues(p)
	return l, attempts, err
}

// queueBeat is how often a waiting multi-lock refreshes its place in the
// keys' queues, and the reservations it holds there, while it pauses: a
// third of its TTL, at least a third of a second (as a Lock waiter's
// heartbeat, whose lease is max(TTL, 1s)). So the place of a Client that
// died, and a key reserved for it, last at most a beat, two node timeouts
// and a second past its last attempt (wait.Watch.Queue), whatever its
// retry delay. 0 for the kinds that keep no place.
func queueBeat(p *plan) time.Duration {
	if m, ok := p.kind.(lease.Multi); !ok || m.Waiter() == "" {
		return 0
	}
	return max(p.lc.ttl, time.Second) / 3
}

// leaveQueues takes a waiting multi-lock's place out of its keys' queues
// on every node once its call has ended, in the background, after its
// attempts in the Client's order: a key reserved for it passes to the next
// waiter, or, with none, is freed and wakes its watchers (release_all.lua).
// Its attempts still on their way cannot queue it again for the time the
// longest of them may take. Nothing for the other kinds, which do not
// queue.
func (c *Client) leaveQueues(p *plan) {
	m, ok := p.kind.(lease.Multi)
	if !ok || m.Waiter() == "" {
		return
	}
	timeout := c.nodeTimeout(p.lc.ttl)
	c.undo(m, m.Waiter(), (2 * fanout.CallBound(timeout)).Milliseconds(), c.nodes.All(), timeout)
}

// queue is Lock: one try on arrival, then the nodes' queues of waiters
// (Client.wait). A fair call, and a call on a key this Client's Lock calls
// found held within the last second, skip the try; a fair TryLock only
// queues if nobody waits, and leaves at once.
func (c *Client) queue(ctx context.Context, p *plan) (*Lock, int, error) {
	delay, retry := p.lc.retry.NextDelay(1) // asked once, before the first attempt's end is known
	if !p.wait {
		delay, retry = 0, false
	}
	var err error
	if !p.lc.fair && (!retry || !c.waits.Busy.Is(p.key, p.start)) {
		var l *Lock
		l, err = c.attempt(ctx, p, nil)
		var end bool
		if err, end = afterAttempt(ctx, err, nil, retry); end {
			return l, 1, err
		}
		c.waits.Busy.Mark(p.key, p.start)
	}
	if p.wait {
		told := false
		if q := c.outlasted(ctx, p.key, err, &told); q != nil {
			return nil, 1, q // the nodes count after the deadline: waiting cannot succeed
		}
	}
	l, retries, err := c.wait(ctx, p, delay, retry)
	return l, 1 + retries, err
}

// resume carries on with the hold p.token has: hold, with an extension
// that proves it on a majority, from the call's start.
func (c *Client) resume(ctx context.Context, p *plan) (*Lock, int, error) {
	l := c.newLock(p, p.token)
	// The hold's own validity is unknown here; the extension decides, from
	// this call's start, on the nodes' own answers.
	held, err := c.hold(ctx, l, claim{until: p.start.Add(l.ttl), extend: true}, p.lc)
	if err == nil && !held {
		err = c.usedUp(c.nodes.Quorum())
	}
	if err != nil {
		return nil, 1, c.nameKind(ctx, p.key, err) // permits, or a key of the application's
	}
	return l, 1, nil
}

// usedUp is the error of a hold whose validity ran out once a majority
// agreed had granted it (agreed nodes).
func (c *Client) usedUp(agreed int) error {
	return &QuorumError{Op: "lock", Agreed: agreed, Needed: c.nodes.Quorum(), Total: c.nodes.Len(),
		Reason: "validity used up", sentinel: ErrNotObtained}
}

// nameKind is err, the refusal of an exclusive attempt on key, with the
// kind the key holds on the first node that refused it, when that is not
// a lock or readers: that node's cause becomes ErrWrongKind. It asks that
// one node, bounded by the node timeout; on any failure err stands.
func (c *Client) nameKind(ctx context.Context, key string, err error) error {
	var qe *QuorumError
	if !errors.As(err, &qe) {
		return err
	}
	for _, n := range qe.Nodes {
		if !errors.Is(n.Err, ErrTaken) {
			continue
		}
		nctx, cancel := context.WithTimeout(ctx, c.nodeTimeout(0))
		defer cancel()
		if kind, err := c.env.KindOf(nctx, n.Node, key); err == nil && kind != "" && kind != "lock" && kind != "readers" {
			n.Err = lease.KindError(kind, "")
		}
		return err
	}
	return err
}

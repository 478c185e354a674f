package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/redlockgo/redlock/internal/lease"
	"github.com/redlockgo/redlock/internal/scripts"
	"github.com/redlockgo/redlock/internal/wait"
)

// queueing is a Lock call's side of its wait (wait.Queue): its waiter's
// rounds, each a call on one node through the node layer (Client.call,
// vote.go, which notes the node's silence and judges a yes as every vote
// is), and the Lock its grants make (Won, through hold).
type queueing struct {
	c       *Client
	p       plan       // a copy: the plan stays on the acquisition's stack
	keys    [][]string // Enqueue's KEYS on each node (lease.Env.QueueKeys)
	timeout time.Duration
	// channels are the waiters' channels on each node (wait.Grants.Hold); nil
	// until the waiting begins.
	channels []string
	lock     *Lock // once Won
	lost     bool  // Lost was called: its error is final
}

// Round implements wait.Nodes: one round of w on node i, in the
// background; its reply reaches w.
func (q *queueing) Round(w *wait.Waiter, i, seq int, mayTake bool) {
	c := q.c
	r := wait.Reply{Node: i, Seq: seq}
	channel := q.channel(i)
	s := c.nodes.Take(q.p.key, w.Token(), false, i)
	c.call(q.p.key, i, q.timeout, func(ctx context.Context) (bool, error) {
		return s.Run(ctx, func(ctx context.Context) (bool, error) {
			err := q.p.ex.Enqueue(ctx, &c.env, i, q.keys[i], w, seq, channel, mayTake, &r)
			return r.Code == scripts.EnqueueSet || r.Code == scripts.EnqueueGranted, err
		})
	}, func(err error) {
		r.Err = err
		r.Final = errors.Is(err, ErrWrongKind) // no round can change what the key holds
		w.Reply(r)                             // one slot per node, and one round in flight per node
	})
}

// channel returns the waiters' channel on node i.
func (q *queueing) channel(i int) string {
	if i < len(q.channels) {
		return q.channels[i]
	}
	return q.c.waits.Grants.Channel()
}

// Hear implements wait.Queue.
func (q *queueing) Hear(channels []string) { q.channels = channels }

// Listening implements wait.Nodes.
func (q *queueing) Listening(i int) bool { return q.c.waits.Grants.Listening(i, q.channel(i)) }

// GiveBack implements wait.Nodes: the keys nodes granted the waiter pass
// to the next waiters, in the background; the waiter stays queued.
func (q *queueing) GiveBack(w *wait.Waiter, nodes []int) {
	q.c.undo(&q.p.ex, w.Token(), "", nodes, q.timeout)
}

// Lost implements wait.Queue: it takes the waiter out of every queue, and
// gives back any key granted to it, in the background (its rounds still on
// their way cannot queue it again for a lease), and returns the error of
// the wait, with the nodes' votes.
func (q *queueing) Lost(ctx context.Context, w *wait.Waiter, err error) error {
	q.c.undo(&q.p.ex, w.Token(), w.Lease().Milliseconds(), q.c.nodes.All(), q.timeout)
	q.lost = true
	return q.c.waitError(w, err, ctx)
}

// Won implements wait.Queue: the grants of w, valid until until, become
// q's lock through hold, confirmed first by an extension when they may
// span more than a restarted node's settle time, or leave less than half
// the TTL (confirmGrants). A waiter gathers its grants over time, and one
// of them may come from a node that restarted since and forgot it; the
// node's peers count it again once their lease ceilings say that every
// lease it could have forgotten has expired (internal/node, horizon.go),
// which holds for leases whose counted votes all landed within the settle
// time. An extension makes the waiter's lock such a lease.
func (q *queueing) Won(ctx context.Context, w *wait.Waiter, until time.Time) error {
	c := q.c
	l := c.newLock(&q.p, w.Token())
	l.leave = w.Lease().Milliseconds()
	cl := claim{until: until, extend: c.confirmGrants(until, l.ttl)}
	held, err := c.hold(ctx, l, cl, q.p.lc)
	switch {
	case err != nil:
		return err
	case !held:
		return c.usedUp(w.Granted())
	}
	q.lock = l
	return nil
}

// confirmGrants reports whether a waiter's grants, valid until until for a
// lock of ttl, must be confirmed by an extension before they make a lock:
// when less than half the TTL is left, or when the grants may span more
// than the settle time of a restarted node's horizon (internal/node,
// horizon.go). A restarted node's peers read their lease ceilings for it
// at the earliest NodeTimeoutLimit after its restart, which covers a lease
// whose counted grants all landed within that time of each other; the
// check takes MaxNodeTimeout, shorter, which confirms more than it must. A grant
// lands after the send of the round it names, and before its answer
// arrives (now, at the latest): the oldest counted round (until less the
// validity of a TTL) bounds them.
func (c *Client) confirmGrants(until time.Time, ttl time.Duration) bool {
	now := c.cfg.clock.Now()
	oldest := until.Add(-(ttl - c.drift(ttl)))
	settle := MaxNodeTimeout - c.drift(MaxNodeTimeout)
	return until.Sub(now) < ttl/2 || now.Sub(oldest) > settle
}

// wait is Lock after its first attempt (none WithFairness): the caller
// waits in the nodes' queues (wait.Hub.Wait, with a queueing as its
// wait.Queue) until a majority granted it, the retry strategy gives up,
// ctx ends or the Client closes. The waiter joins the queues at once;
// delay and retry are NextDelay(1)'s answer, for the first retry. It
// returns the lock, or the error, and the number of retries.
func (c *Client) wait(ctx context.Context, p *plan, delay time.Duration, retry bool) (*Lock, int, error) {
	ttl := p.lc.ttl
	q := &queueing{c: c, p: *p, keys: c.env.QueueKeys(p.key), timeout: c.nodeTimeout(ttl)}
	w := wait.New(q, wait.Config{Clock: c.cfg.clock, N: c.nodes.Len(), Quorum: c.nodes.Quorum(), Token: newToken(),
		TTL: ttl, Drift: c.drift(ttl), Retry: p.lc.retry, Check: contendedGrace(q.timeout), Delayed: lease.DelayError})
	for i := range c.nodes.Len() {
		if c.nodes.Silent(i) {
			w.Silent(i) // until the node answers this waiter
		}
	}
	if err := c.waits.Wait(ctx, w, p.key, q, delay, retry); err != nil {
		if !q.lost {
			err = withContext(err, ctx.Err()) // the grants' confirmation, cut by ctx
		}
		return nil, w.Retries(), err
	}
	return q.lock, w.Retries(), nil
}

// waitError is the error of a wait that failed with err.
func (c *Client) waitError(w *wait.Waiter, err error, ctx context.Context) error {
	qe := c.quorumError("lock", ErrNotObtained, w.Result())
	if qe.Agreed >= c.nodes.Quorum() {
		qe.Reason = "validity used up" // the grants came too late to leave any
	}
	switch {
	case errors.Is(err, wait.ErrClosed):
		return errors.Join(qe, ErrClosed)
	case ctx.Err() != nil:
		return withContext(qe, ctx.Err())
	}
	return qe
}

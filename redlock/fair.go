package redlock

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"github.com/redlockgo/redlock/internal/fanout"
	"github.com/redlockgo/redlock/internal/scripts"
)

// WithFairness makes Lock first-come first-served across Clients and
// processes: each waiter takes a ticket (its arrival time) and enters a queue
// kept on every node next to the key (QueueKeys), and a node sets the lock
// only for the waiter at the head of its queue. A waiter that dies leaves the
// queue when its lease runs out (the larger of the TTL and one second) so it
// cannot block the queue; one that gives up leaves at once.
//
// Ordering is by ticket, so by the waiters' clocks: FIFO-ish across hosts
// whose clocks differ. Every client of a key must use WithFairness, or the
// others barge. It cannot be combined with WithFencing. Without it, waiters
// of one Client are still served in order (see Lock).
func WithFairness() LockOption {
	return func(c *lockConfig) { c.fair = true }
}

// QueueKeys returns the Redis keys of the fair queue of the lock key: the
// queue (a sorted set of waiter ids by ticket) and the waiters' leases.
func QueueKeys(key string) (queue, leases string) {
	return key + ":queue", key + ":queue:leases"
}

// ticket is one waiter's place in a fair queue, the same on every node.
type ticket struct {
	id     string
	number int64 // arrival time in microseconds
	lease  time.Duration
}

func (c *Client) newTicket(ttl time.Duration) *ticket {
	return &ticket{id: rand.Text(), number: time.Now().UnixMicro(), lease: max(ttl, time.Second)}
}

// setFair is one node's acquisition in a fair queue.
func (c *Client) setFair(ctx context.Context, i int, key, token string, ttl time.Duration, t *ticket) (bool, error) {
	q, leases := QueueKeys(key)
	r, err := c.pools[i].Eval(ctx, scripts.AcquireFair, []string{key, q, leases},
		token, ttl.Milliseconds(), t.id, t.number, t.lease.Milliseconds())
	if err != nil {
		return false, err
	}
	return asInt(r) == 1, nil
}

// leaveQueue removes the waiter holding t from the queue on nodes (nil: every
// node), waiting at most one node timeout.
func (c *Client) leaveQueue(ctx context.Context, key string, t *ticket, nodes []int, timeout time.Duration) {
	q, leases := QueueKeys(key)
	if nodes == nil {
		nodes = c.allNodes()
	}
	fanout.Each(context.WithoutCancel(ctx), &c.wg, nodes, timeout, func(ctx context.Context, i int) (bool, error) {
		_, err := c.pools[i].Eval(ctx, scripts.LeaveQueue, []string{q, leases}, t.id)
		return err == nil, err
	})
}

func (c *Client) allNodes() []int {
	nodes := make([]int, len(c.pools))
	for i := range nodes {
		nodes[i] = i
	}
	return nodes
}

// leaveQueueAfter leaves the queue once an acquisition is over: l is the
// lock obtained (nil if none) after attempts attempts.
//
// A waiter that gave up leaves every node's queue at once. A winner left
// the queues of the nodes that granted it (the script removes the winner);
// it leaves the others (l.queued) in the background, so as not to delay the
// lock. Either way it leaves again in the background one node timeout
// later: an attempt's script still on its way to a slow node would
// otherwise put the waiter back in that node's queue, at the head, blocking
// it until the lease ran out. Only an earlier attempt can still be on its
// way to a node that granted the last one, so after a single attempt that
// second pass skips them.
func (c *Client) leaveQueueAfter(ctx context.Context, key string, t *ticket, timeout time.Duration, l *Lock, attempts int) {
	var now, later []int // later nil: every node
	if l == nil {
		c.leaveQueue(ctx, key, t, nil, timeout)
	} else {
		now = l.queued
		if attempts <= 1 {
			if len(now) == 0 {
				return // granted everywhere, and no earlier attempt to outrun
			}
			later = now
		}
	}
	c.wg.Add(1) // inside a registered operation: safe against Close
	go func() {
		defer c.wg.Done()
		if len(now) > 0 {
			c.leaveQueue(ctx, key, t, now, timeout)
		}
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-c.closing:
		}
		c.leaveQueue(ctx, key, t, later, timeout)
	}()
}

var errFairFencing = errors.New("redlock: WithFairness cannot be combined with WithFencing")

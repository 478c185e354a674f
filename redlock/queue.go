package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/redlockgo/redlock/internal/scripts"
)

// queueing is a Client's side of the waiters' node calls: it implements
// queueNodes for the waiters of one key.
type queueing struct {
	c       *Client
	key     string
	kind    *exclusive // the lock's kind: how a grant is given back
	keys    [][]string // Enqueue's KEYS on each node (releaseKeys)
	timeout time.Duration
	// channels are the waiters' channels on each node (grants.hold); nil
	// until the waiting begins.
	channels []string
}

func (c *Client) queueing(key string, ttl time.Duration, lc lockConfig) *queueing {
	kind := c.exclusiveKind(key, lc)
	return &queueing{c: c, key: key, kind: &kind, keys: c.releaseKeys(key), timeout: c.nodeTimeout(ttl)}
}

// round implements queueNodes.
func (q *queueing) round(w *waiter, i, seq int, mayTake bool) {
	take := "0"
	if mayTake {
		take = "1"
	}
	c := q.c
	s := c.order.take(q.key, w.token, false, i, len(c.pools))
	c.wg.Add(1) // inside the waiter's registered operation: safe against Close
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), q.timeout)
		defer cancel()
		r := reply{node: i, seq: seq}
		_, r.err = s.run(ctx, func(ctx context.Context) (bool, error) {
			v, err := c.pools[i].Eval(ctx, scripts.Enqueue, q.keys[i], c.withDelay([]any{w.token, w.ttl.Milliseconds(),
				w.ticket, w.lease().Milliseconds(), seq, q.channel(i), take})...)
			if err != nil {
				return false, err
			}
			return true, parseEnqueue(v, &r)
		})
		c.silence.note(i, r.err)
		if r.err == nil && (r.code == scripts.EnqueueSet || r.code == scripts.EnqueueGranted) {
			r.err = c.health(ctx, i, q.key) // the node holds our token, but must not count
		}
		w.replies <- r // one slot per node, and one round in flight per node
	}()
}

// parseEnqueue reads Enqueue's reply into r.
func parseEnqueue(v any, r *reply) error {
	arr, _ := v.([]any)
	if len(arr) == 0 {
		return errMalformed
	}
	r.code = asInt(arr[0])
	switch r.code {
	case scripts.EnqueueSet:
	case scripts.EnqueueGranted:
		if len(arr) < 2 {
			return errMalformed
		}
		r.grantSeq = int(asInt(arr[1]))
	case scripts.EnqueueQueued:
		if len(arr) > 1 {
			r.holder, _ = arr[1].(string)
		}
		if len(arr) > 2 {
			r.holderTTL = time.Duration(max(asInt(arr[2]), 0)) * time.Millisecond
		}
		r.delayed = len(arr) > 3 && asInt(arr[3]) == 1
	case scripts.EnqueueLeft:
		return errLeft
	case scripts.OtherKind:
		if len(arr) < 2 {
			return errMalformed
		}
		return kindError(arr[1], "")
	default:
		return errMalformed
	}
	return nil
}

var (
	errMalformed = errors.New("malformed reply from node")
	errLeft      = errors.New("left the queue")
)

// channel returns the waiters' channel on node i.
func (q *queueing) channel(i int) string {
	if i < len(q.channels) {
		return q.channels[i]
	}
	return q.c.grants.channel
}

// listening implements queueNodes.
func (q *queueing) listening(i int) bool { return q.c.grants.listening(i, q.channel(i)) }

// giveBack implements queueNodes: the keys nodes granted the waiter pass
// to the next waiters, in the background; the waiter stays queued.
func (q *queueing) giveBack(w *waiter, nodes []int) {
	q.c.undo(q.kind, w.token, "", nodes, q.timeout)
}

// leave takes the waiter out of every queue, and gives back any key granted
// to it, in the background. Its rounds still on their way cannot queue it
// again for a lease.
func (q *queueing) leave(w *waiter) {
	q.c.undo(q.kind, w.token, w.lease().Milliseconds(), q.c.allNodes(), q.timeout)
}

// releaseArgs appends to buf Release's arguments for token: keep is how long, in
// ms, the token may not queue again ("": it stays queued). They are built
// once per release, for every node.
func (c *Client) releaseArgs(buf []any, token string, keep any) []any {
	return c.withDelay(append(buf, token, keep, c.grants.channel))
}

// releaseOn runs Release on node i with its keys (releaseKeys) and args
// (releaseArgs). It reports whether the key held the token there; when the
// node handed the key on to a waiter of this Client, that waiter hears of
// it from the reply, at once, and the node publishes nothing.
func (c *Client) releaseOn(ctx context.Context, i int, keys []string, args []any) (bool, error) {
	v, err := c.pools[i].Eval(ctx, scripts.Release, keys, args...)
	c.silence.note(i, err)
	if err != nil {
		return false, err
	}
	arr, _ := v.([]any)
	if len(arr) == 0 {
		return false, errMalformed
	}
	if len(arr) >= 3 {
		if next, ok := arr[1].(string); ok {
			c.grants.deliver(next, i, int(asInt(arr[2])))
		}
	}
	return asInt(arr[0]) == 1, nil
}

// allNodes returns 0..n-1.
func (c *Client) allNodes() []int {
	nodes := make([]int, len(c.pools))
	for i := range nodes {
		nodes[i] = i
	}
	return nodes
}

// wait is Lock after its first attempt (none WithFairness): the caller
// waits in the nodes' queues (see waiter) until a majority granted it, the
// retry strategy gives up, ctx ends or the Client closes. The waiter joins
// the queues at once; delay and retry are NextDelay(1)'s answer, for the
// first retry. It returns the lock, or the error, and the number of retries.
func (c *Client) wait(ctx context.Context, key string, ttl time.Duration, lc lockConfig, delay time.Duration, retry bool) (*Lock, int, error) {
	q := c.queueing(key, ttl, lc)
	w := newWaiter(q, c.cfg.clock, len(c.pools), c.quorum, newToken(), ttl, c.drift(ttl), lc.retry, q.timeout)
	for i := range w.view {
		if c.silence.silent(i) {
			w.view[i].err = ErrNodeTimeout // until the node answers this waiter
		}
	}
	c.grants.register(w, key)
	defer c.grants.unregister(w)
	c.grants.start(c.pools, c.nodeTimeout(0))
	channels, release := c.grants.hold(key, len(c.pools))
	defer release()
	q.channels = channels
	for {
		until, err := w.wait(ctx, c.closing, delay, retry)
		if w.waited {
			c.busy.mark(key, c.cfg.clock.Now())
		}
		if err != nil {
			q.leave(w)
			return nil, w.retries, c.waitError(w, err, ctx)
		}
		l, err := c.granted(ctx, q, w, until, lc)
		if err == nil {
			return l, w.retries, nil
		}
		// The grants could not be confirmed (fence, extension): give them
		// back and wait on.
		q.giveBack(w, c.allNodes())
		for i := range w.view {
			w.view[i].granted, w.view[i].floor = false, w.seq+1
		}
		if ctx.Err() != nil {
			return nil, w.retries, withContext(err, ctx.Err())
		}
		delay, retry = w.retry.NextDelay(w.retries + 1)
	}
}

// granted turns the grants of a waiter into a Lock valid until until. A lock
// left with less than half its TTL of validity (the waiter's rounds were
// far apart) is extended once before it is returned; a fenced one gets its
// fence.
func (c *Client) granted(ctx context.Context, q *queueing, w *waiter, until time.Time, lc lockConfig) (*Lock, error) {
	l := c.newLock(q.key, w.token, w.ttl, lc.heal)
	l.ex = *q.kind
	l.kind = &l.ex
	l.until = until
	l.leave = w.lease().Milliseconds()
	if until.Sub(c.cfg.clock.Now()) < w.ttl/2 {
		if err := l.extendOnce(ctx, w.ttl, c.nodeTimeout(w.ttl)); err != nil {
			return nil, err
		}
	}
	if lc.fencing {
		fence, err := c.fenceHeld(ctx, l)
		if err != nil {
			return nil, err
		}
		l.fence = fence
	}
	if !c.cfg.clock.Now().Before(l.Until()) {
		return nil, &QuorumError{Op: "lock", Agreed: w.granted(), Needed: c.quorum, Total: len(c.pools),
			Reason: "validity used up", sentinel: ErrNotObtained}
	}
	return l, nil
}

// waitError is the error of a wait that failed with err.
func (c *Client) waitError(w *waiter, err error, ctx context.Context) error {
	qe := c.quorumError("lock", ErrNotObtained, w.result())
	switch {
	case errors.Is(err, ErrClosed):
		return errors.Join(qe, ErrClosed)
	case ctx.Err() != nil:
		return withContext(qe, ctx.Err())
	}
	return qe
}

package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/redlockgo/redlock/internal/scripts"
	"github.com/redlockgo/redlock/internal/wait"
	"github.com/redlockgo/redlock/pool"
)

// queueing is a Lock call's side of its wait (wait.Queue): the node calls
// of its waiter's rounds, judged here (wait.Nodes), and the Lock its grants
// make.
type queueing struct {
	c       *Client
	key     string
	kind    *exclusive // the lock's kind: how a grant is given back
	keys    [][]string // Enqueue's KEYS on each node (releaseKeys)
	timeout time.Duration
	lc      lockConfig
	// channels are the waiters' channels on each node (wait.Grants.Hold); nil
	// until the waiting begins.
	channels []string
	lock     *Lock // once Won
	lost     bool  // Lost was called: its error is final
}

func (c *Client) queueing(key string, ttl time.Duration, lc lockConfig) *queueing {
	kind := c.exclusiveKind(key, lc)
	return &queueing{c: c, key: key, kind: &kind, keys: c.releaseKeys(key), timeout: c.nodeTimeout(ttl), lc: lc}
}

// Round implements wait.Nodes.
func (q *queueing) Round(w *wait.Waiter, i, seq int, mayTake bool) {
	take := "0"
	if mayTake {
		take = "1"
	}
	c := q.c
	s := c.nodes.Take(q.key, w.Token(), false, i)
	c.life.wg.Add(1) // inside the waiter's registered operation: safe against Close
	go func() {
		defer c.life.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), q.timeout)
		defer cancel()
		r := wait.Reply{Node: i, Seq: seq}
		_, r.Err = s.Run(ctx, func(ctx context.Context) (bool, error) {
			v, err := c.nodes.Pool(i).Eval(ctx, scripts.Enqueue, q.keys[i], c.withDelay([]any{w.Token(), w.TTL().Milliseconds(),
				w.Ticket(), w.Lease().Milliseconds(), seq, q.channel(i), take})...)
			if err != nil {
				return false, err
			}
			return true, parseEnqueue(v, &r)
		})
		c.nodes.Note(i, r.Err)
		if r.Err == nil && (r.Code == scripts.EnqueueSet || r.Code == scripts.EnqueueGranted) {
			r.Err = c.health(ctx, i, q.key) // the node holds our token, but must not count
		}
		r.Final = errors.Is(r.Err, ErrWrongKind) // no round can change what the key holds
		w.Reply(r)                               // one slot per node, and one round in flight per node
	}()
}

// parseEnqueue reads Enqueue's reply into r.
func parseEnqueue(v any, r *wait.Reply) error {
	arr, _ := v.([]any)
	if len(arr) == 0 {
		return errMalformed
	}
	r.Code = asInt(arr[0])
	switch r.Code {
	case scripts.EnqueueSet:
	case scripts.EnqueueGranted:
		if len(arr) < 2 {
			return errMalformed
		}
		r.GrantSeq = int(asInt(arr[1]))
	case scripts.EnqueueQueued:
		if len(arr) > 1 {
			r.Holder, _ = arr[1].(string)
		}
		if len(arr) > 2 {
			r.HolderTTL = time.Duration(max(asInt(arr[2]), 0)) * time.Millisecond
		}
		r.Delayed = len(arr) > 3 && asInt(arr[3]) == 1
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
	return q.c.waits.Grants.Channel()
}

// Hear implements wait.Queue.
func (q *queueing) Hear(channels []string) { q.channels = channels }

// Listening implements wait.Nodes.
func (q *queueing) Listening(i int) bool { return q.c.waits.Grants.Listening(i, q.channel(i)) }

// GiveBack implements wait.Nodes: the keys nodes granted the waiter pass
// to the next waiters, in the background; the waiter stays queued.
func (q *queueing) GiveBack(w *wait.Waiter, nodes []int) {
	q.c.undo(q.kind, w.Token(), "", nodes, q.timeout)
}

// Lost implements wait.Queue: it takes the waiter out of every queue, and
// gives back any key granted to it, in the background (its rounds still on
// their way cannot queue it again for a lease), and returns the error of
// the wait, with the nodes' votes.
func (q *queueing) Lost(ctx context.Context, w *wait.Waiter, err error) error {
	q.c.undo(q.kind, w.Token(), w.Lease().Milliseconds(), q.c.nodes.All(), q.timeout)
	q.lost = true
	return q.c.waitError(w, err, ctx)
}

// Won implements wait.Queue: the grants of w, valid until until, become
// q's lock (granted).
func (q *queueing) Won(ctx context.Context, w *wait.Waiter, until time.Time) error {
	l, err := q.c.granted(ctx, q, w, until, q.lc)
	q.lock = l
	return err
}

// releaseArgs appends to buf Release's arguments for token: keep is how long, in
// ms, the token may not queue again ("": it stays queued). They are built
// once per release, for every node.
func (c *Client) releaseArgs(buf []any, token string, keep any) []any {
	return c.withDelay(append(buf, token, keep, c.waits.Grants.Channel()))
}

// releaseOn runs Release on node i with its keys (releaseKeys) and args
// (releaseArgs). It reports whether the key held the token there; when the
// node handed the key on to a waiter of this Client, that waiter hears of
// it from the reply, at once, and the node publishes nothing.
func (c *Client) releaseOn(ctx context.Context, i int, keys []string, args []any) (bool, error) {
	code, err := c.releaseWith(ctx, i, scripts.Release, keys, args)
	return code == 1, err
}

// releaseWith runs a release script with Release's reply ({code, next
// waiter, its round} or {code}) on node i, hands the key's grant to the
// next waiter when it is this Client's, and returns the code.
func (c *Client) releaseWith(ctx context.Context, i int, script *pool.Script, keys []string, args []any) (int64, error) {
	v, err := c.nodes.Pool(i).Eval(ctx, script, keys, args...)
	c.nodes.Note(i, err)
	if err != nil {
		return 0, err
	}
	arr, _ := v.([]any)
	if len(arr) == 0 {
		return 0, errMalformed
	}
	if len(arr) >= 3 {
		if next, ok := arr[1].(string); ok {
			c.waits.Grants.Deliver(next, i, int(asInt(arr[2])))
		}
	}
	return asInt(arr[0]), nil
}

// wait is Lock after its first attempt (none WithFairness): the caller
// waits in the nodes' queues (wait.Hub.Wait, with q as its wait.Queue)
// until a majority granted it, the retry strategy gives up, ctx ends or the
// Client closes. The waiter joins the queues at once; delay and retry are
// NextDelay(1)'s answer, for the first retry. It returns the lock, or the
// error, and the number of retries.
func (c *Client) wait(ctx context.Context, key string, ttl time.Duration, lc lockConfig, delay time.Duration, retry bool) (*Lock, int, error) {
	q := c.queueing(key, ttl, lc)
	w := wait.New(q, wait.Config{Clock: c.cfg.clock, N: c.nodes.Len(), Quorum: c.nodes.Quorum(), Token: newToken(),
		TTL: ttl, Drift: c.drift(ttl), Retry: lc.retry, Check: contendedGrace(q.timeout), Delayed: delayError})
	for i := range c.nodes.Len() {
		if c.nodes.Silent(i) {
			w.Silent(i) // until the node answers this waiter
		}
	}
	if err := c.waits.Wait(ctx, w, key, q, delay, retry); err != nil {
		if !q.lost {
			err = withContext(err, ctx.Err()) // the grants' confirmation, cut by ctx
		}
		return nil, w.Retries(), err
	}
	return q.lock, w.Retries(), nil
}

// granted turns the grants of a waiter into a Lock valid until until. A lock
// left with less than half its TTL of validity (the waiter's rounds were
// far apart) is extended once before it is returned; a fenced one gets its
// fence.
func (c *Client) granted(ctx context.Context, q *queueing, w *wait.Waiter, until time.Time, lc lockConfig) (*Lock, error) {
	ttl := w.TTL()
	l := c.newLock(q.key, w.Token(), ttl, lc.heal)
	l.ex = *q.kind
	l.kind = &l.ex
	l.until = until
	l.leave = w.Lease().Milliseconds()
	if until.Sub(c.cfg.clock.Now()) < ttl/2 {
		if err := l.extendOnce(ctx, ttl, c.nodeTimeout(ttl)); err != nil {
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
		return nil, &QuorumError{Op: "lock", Agreed: w.Granted(), Needed: c.nodes.Quorum(), Total: c.nodes.Len(),
			Reason: "validity used up", sentinel: ErrNotObtained}
	}
	return l, nil
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

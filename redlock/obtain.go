package redlock

import (
	"context"
	"errors"

	"github.com/redlockgo/redlock/internal/wait"
	"github.com/redlockgo/redlock/pool"
)

// How the blocking calls that do not queue (RLock, AcquirePermit, LockAll,
// an owner's Lock) reach internal/wait: the Hub's retry loop (wait.Hub.Retry)
// paces and wakes them, and reaches the engine only through the attempt
// obtain gives it. Lock's queue is queue.go.

// obtain is TryRLock, TryAcquirePermit and TryLockAll after their own
// checks (one attempt, block false), and RLock, AcquirePermit and LockAll
// (block): attempts paced by the retry strategy and cut short by a release
// of a watched key (wait.Hub.Retry) until one succeeds, the strategy stops,
// ctx ends, the Client closes or a node says the key holds another kind
// (ErrWrongKind: no retry can succeed). The TTL is lc's (whole
// milliseconds).
func (c *Client) obtain(ctx context.Context, k leaseKind, lc lockConfig, block bool) (*Lock, error) {
	start, ttl := c.cfg.clock.Now(), lc.ttl
	keys := k.watched()
	var l *Lock
	if !block { // one attempt, and up to two more to settle a split (split.go)
		attempts, err := c.settleSplit(ctx, c.nodeTimeout(ttl), func() (err error) {
			l, err = c.attempt(ctx, c.newLock(keys[0], kindToken(k), ttl, lc.heal), k, lc, nil)
			return err
		})
		err, _ = afterAttempt(ctx, err, nil, false)
		return c.obtained(ctx, keys[0], l, err, start, attempts, lc)
	}
	var prev error // the error of the last attempt that ran to its decision
	attempts, err := c.waits.Retry(ctx, keys, lc.retry, c.nodeTimeout(ttl), func(ctx context.Context, w *wait.Watch, retry bool) (error, bool) {
		var err error
		l, err = c.attempt(ctx, c.newLock(keys[0], kindToken(k), ttl, lc.heal), k, lc, w)
		err, end := afterAttempt(ctx, err, prev, retry)
		prev = err
		return err, end || errors.Is(err, ErrWrongKind)
	})
	return c.obtained(ctx, keys[0], l, err, start, attempts, lc)
}

// nodeWatch is what an attempt's script on one node needs to register a
// watcher: the watch sets of the call's keys there, the channel, the lease
// in ms. The zero value registers nothing.
type nodeWatch struct {
	keys    []string
	channel string
	lease   int64
}

// watchOn returns w's registration on node i for the keys kind watches
// (wait.Watch.On): nothing for a nil w, or where the node cannot be
// listened to.
func (c *Client) watchOn(w *wait.Watch, i int, kind leaseKind) nodeWatch {
	ch, lease, ok := w.On(i)
	if !ok {
		return nodeWatch{}
	}
	return nodeWatch{keys: c.watchKeys(i, kind.watched()), channel: ch, lease: lease}
}

// notifiers returns each pool's notification API, nil for a pool without
// one: what the Client's listeners need of the nodes.
func notifiers(pools []pool.Pool) []pool.Notifier {
	out := make([]pool.Notifier, len(pools))
	for i, p := range pools {
		out[i], _ = p.(pool.Notifier)
	}
	return out
}

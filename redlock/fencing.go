package redlock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redlockgo/redlock/internal/fanout"
	"github.com/redlockgo/redlock/internal/node"
	"github.com/redlockgo/redlock/internal/scripts"
)

// WithFencing makes the acquisition produce a fencing token, Lock.Fence():
// a number strictly greater than the fence of every earlier successful
// fenced acquisition of the same key, as long as a majority of nodes keep
// their data (appendfsync always) and the other assumptions of the lock hold.
// A resource that accepts a write only with a fence at least as high as the
// highest it has seen rejects a holder whose lease ran out while it was
// paused. See docs/fencing.md.
//
// It costs one more round to the nodes: phase 1 sets the key and reads each
// node's counter, the client picks max+1, and phase 2 raises the counter on
// a majority while the key still holds our token. The lock is returned only
// after phase 2, within validity; a failed attempt's fence is never handed
// out. The counter of key K is the Redis key "K:fence" on every node, and
// has no TTL. On Redis Cluster nodes, give K a hash tag (e.g.
// "{orders:42}") so that both keys share a slot; standalone masters, the
// intended setup, need nothing.
func WithFencing() LockOption {
	return func(c *lockConfig) { c.fencing = true }
}

// fenceKey returns the Redis key of the fence counter of the lock key, as
// WithFencing documents it.
func fenceKey(key string) string { return node.FenceKey(key) }

// Fence returns the lock's fencing token, or 0 for a lock taken without
// WithFencing (and for a nil Lock).
func (l *Lock) Fence() uint64 {
	if l == nil {
		return 0
	}
	return l.fence
}

// setFenced is phase 1 on one node: SET NX PX and read the counter. It stores
// the counter in *counter.
func (c *Client) setFenced(ctx context.Context, i int, key, token string, ttl time.Duration, counter *uint64) (bool, error) {
	keys := c.withHeld([]string{key, c.fenceKey(i, key)}, i, key)
	r, err := c.nodes.Pool(i).Eval(ctx, scripts.AcquireFenced, keys, c.withDelay([]any{token, ttl.Milliseconds()})...)
	if err != nil {
		return false, err
	}
	arr, _ := r.([]any)
	if len(arr) > 0 && asInt(arr[0]) == scripts.AcquireDelayed {
		return false, delayedReply(arr)
	}
	if len(arr) == 0 || asInt(arr[0]) != 1 {
		return false, nil
	}
	if len(arr) < 2 {
		return false, errors.New("redlock: malformed fence reply")
	}
	n, err := parseCounter(arr[1], c.fenceKey(i, key))
	if err != nil {
		return false, err
	}
	*counter = n
	return true, nil
}

// parseCounter reads a fence counter from a script's reply (a decimal
// string); key names the counter in the error, if known. A counter that is
// not a number fails the node: the key is ours there, so the attempt's
// cleanup releases it.
func parseCounter(v any, key string) (uint64, error) {
	s, _ := v.(string)
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		if key != "" {
			key += " "
		}
		return 0, fmt.Errorf("redlock: fence counter %sis not a number: %q", key, s)
	}
	return n, nil
}

// raiseFence is phase 2: pick max+1 over the counters read by the nodes
// that said yes before the decision, and raise the counter to it on a
// majority where the key still holds our token.
func (c *Client) raiseFence(ctx context.Context, l *Lock, res fanout.Result, takes []nodeTake, timeout time.Duration) (uint64, error) {
	var top uint64
	for _, v := range res.Votes {
		if v.OK {
			top = max(top, takes[v.Node].counter)
		}
	}
	if top == math.MaxUint64 {
		return 0, fmt.Errorf("%w: the fence counter of %q is exhausted", ErrNotObtained, l.key)
	}
	fence := top + 1
	arg := strconv.FormatUint(fence, 10)
	slots := c.nodes.TakeAll(l.key, l.token, false, nil)
	res2 := c.decide(ctx, l.key, timeout, 0,
		func(ctx context.Context, i int) (bool, error) {
			return slots[i].Run(ctx, func(ctx context.Context) (bool, error) {
				return l.raiseFenceOn(ctx, i, arg)
			})
		}, nil, nil)
	if !res2.Reached {
		qe := c.quorumError("lock", ErrNotObtained, res2)
		qe.Reason = "fence not recorded at a majority"
		return 0, qe
	}
	return fence, nil
}

// fenceHeld gives a fence to l, a lock that reached its holder through the
// queue: phase 1 reads the counters of a majority of nodes where the key
// holds l's token (nobody else can raise them meanwhile), phase 2 is
// raiseFence's.
func (c *Client) fenceHeld(ctx context.Context, l *Lock) (uint64, error) {
	res, takes, err := c.readFences(ctx, l)
	if err != nil {
		return 0, err
	}
	return c.raiseFence(ctx, l, res, takes, c.nodeTimeout(l.ttl))
}

// readFences reads the fence counter of l's key on every node where the key
// holds l's token, and returns the votes and counters once a majority
// answered; otherwise an error wrapping ErrNotObtained.
func (c *Client) readFences(ctx context.Context, l *Lock) (fanout.Result, []nodeTake, error) {
	takes := make([]nodeTake, c.nodes.Len())
	slots := c.nodes.TakeAll(l.key, l.token, false, nil)
	res := c.decide(ctx, l.key, c.nodeTimeout(l.ttl), 0,
		func(ctx context.Context, i int) (bool, error) {
			return slots[i].Run(ctx, func(ctx context.Context) (bool, error) {
				r, err := c.nodes.Pool(i).Eval(ctx, scripts.FenceRead, []string{l.key, c.fenceKey(i, l.key)}, l.token)
				if err != nil || r == nil {
					return false, err
				}
				n, err := parseCounter(r, c.fenceKey(i, l.key))
				if err != nil {
					return false, err
				}
				takes[i].counter = n
				return true, nil
			})
		}, nil, nil)
	if !res.Reached {
		qe := c.quorumError("lock", ErrNotObtained, res)
		qe.Reason = "fence counters not read at a majority"
		return res, nil, qe
	}
	return res, takes, nil
}

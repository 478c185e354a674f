package redlock

import (
	"context"
	"time"

	"github.com/redlockgo/redlock/internal/node"
	"github.com/redlockgo/redlock/internal/scripts"
)

// TryRLock makes one attempt to take a read lock on key for ttl: a shared
// hold that any number of readers may have at once, which excludes Lock and
// TryLock on the same key and which a writer's lock excludes. It returns
// the reader's *Lock, or an error wrapping ErrNotObtained (and ctx.Err()
// when ctx ended the attempt) with one *NodeError per node that did not
// agree: ErrTaken where a writer holds the key or waits for it.
//
// Each reader is a lease of its own on a majority of nodes, with its own
// token and expiry, and the same validity rule as Lock: Extend, Unlock,
// WithAutoExtend, Done/Err and Client.Do's loss reporting work on it as on
// a lock, and act on that reader only. A reader that dies holds the key no
// longer than its own TTL; no reader ever extends another's lease.
//
// Writers go first: a reader is refused on a node while a writer waits in
// the key's queue there (a Lock call that found the key held), so a stream
// of readers cannot starve a waiting writer. TryLock does not queue, so it
// gets no such priority. Readers waiting in RLock are not queued: under a
// stream of writers they may wait long. WithFencing gives the reader a fence
// greater than that of every fenced acquisition of key (read or write) that
// completed before this one began; readers that overlap may share a fence.
// WithFairness does not apply to readers and is ignored. See docs/rwlock.md.
//
// ttl has the range of TryLock's; outside it, or with a key TryLock refuses (empty or reserved), TryRLock
// returns an error without calling a node. The cleanup of a failed attempt
// runs in the background, each node call bounded by the node timeout.
func (c *Client) TryRLock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.rlock(ctx, key, ttl, opts, false)
}

// RLock takes a read lock on key for ttl (see TryRLock), waiting until it
// succeeds, the retry strategy (WithRetry) stops, ctx ends or the Client
// closes. Retry k is a new attempt, NextDelay(k) after the one before it,
// or at once when the writer's Unlock leaves the key free, in any Client:
// a refused attempt registers the Client as a watcher of the key on each
// node, in the same script, and the release there tells it (as for
// LockAll; see docs/rwlock.md). A writer's key freed otherwise (its TTL
// ran out, or a waiting writer gave up) is noticed by the next attempt,
// with the default strategy within 250ms plus one attempt; so is a wake-up
// lost with a listener's connection. On failure the error wraps
// ErrNotObtained, the per-node detail of the last attempt that ran to its
// decision and, when ctx ended the wait, ctx.Err(); it returns within ctx's
// deadline whatever the nodes do.
func (c *Client) RLock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.rlock(ctx, key, ttl, opts, true)
}

func (c *Client) rlock(ctx context.Context, key string, ttl time.Duration, opts []LockOption, wait bool) (*Lock, error) {
	done, err := c.begin()
	if err != nil {
		return nil, err
	}
	defer done()
	lc, err := c.checkOwnerless(ctx, key, ttl, opts)
	if err != nil {
		return nil, err
	}
	return c.obtain(ctx, readLease{key: key}, lc, wait)
}

// readLease is a reader's leaseKind (rlock_*.lua): each reader a lease of
// its own on the key, excluding writers.
type readLease struct{ key string }

func (r readLease) enter(c *Client, token string, nodes []int) []node.Slot {
	return c.nodes.TakeAll(r.key, token, true, nodes)
}

func (r readLease) take(ctx context.Context, c *Client, i int, token string, ttl time.Duration, heal bool, w nodeWatch, t *nodeTake) (bool, error) {
	flag := "0"
	if heal {
		flag = "1"
	}
	n := c.nodes.Names(i)
	keys := []string{r.key, n.Readers(r.key), n.Queue(r.key)[2], n.Fence(r.key), n.Held(r.key)}
	args := []any{token, ttl.Milliseconds(), flag, c.cfg.lockDelay.Milliseconds()}
	if w.keys != nil {
		keys = append(keys, w.keys[0])
		args = append(args, w.channel, w.lease)
	}
	v, err := c.nodes.Pool(i).Eval(ctx, scripts.RLockAcquire, keys, args...)
	if err != nil {
		return false, err
	}
	return parseTake(v, false, t)
}

func (r readLease) extend(ctx context.Context, c *Client, i int, token string, ttl time.Duration) (int64, error) {
	n := c.nodes.Names(i)
	keys := []string{r.key, n.Readers(r.key), n.Held(r.key)}
	v, err := c.nodes.Pool(i).Eval(ctx, scripts.RLockExtend, keys, token, ttl.Milliseconds(), c.cfg.lockDelay.Milliseconds())
	return asInt(v), err
}

func (r readLease) releaser(c *Client, token string, _ any, wake bool) releaseCall {
	return releaseFunc(func(ctx context.Context, i int) (bool, error) { return r.release(ctx, c, i, token, wake) })
}

func (r readLease) release(ctx context.Context, c *Client, i int, token string, wake bool) (bool, error) {
	n := c.nodes.Names(i)
	q := n.Queue(r.key)
	keys := []string{r.key, n.Readers(r.key), q[1], q[2], q[3], n.Held(r.key)}
	if wake {
		keys = append(keys, n.Watch(r.key))
	}
	v, err := c.nodes.Pool(i).Eval(ctx, scripts.RLockRelease, keys, token, c.cfg.lockDelay.Milliseconds())
	if err != nil {
		return false, err
	}
	arr, _ := v.([]any)
	if len(arr) == 0 {
		return false, errMalformed
	}
	if len(arr) >= 3 { // the last reader handed the key to a waiting writer
		if next, ok := arr[1].(string); ok {
			c.waits.Grants.Deliver(next, i, int(asInt(arr[2])))
		}
	}
	return asInt(arr[0]) == 1, nil
}

func (r readLease) raiseFence(ctx context.Context, c *Client, i int, token, fence string) (bool, error) {
	n := c.nodes.Names(i)
	keys := []string{r.key, n.Readers(r.key), n.Fence(r.key)}
	v, err := c.nodes.Pool(i).Eval(ctx, scripts.RLockFence, keys, token, fence)
	return asInt(v) == 1, err
}

func (r readLease) watched() []string  { return []string{r.key} }
func (r readLease) places() bool       { return false }
func (r readLease) attempt() leaseKind { return r }

func (r readLease) placed(string) leaseKind { return r }

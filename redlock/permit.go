package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redlockgo/redlock/internal/node"
	"github.com/redlockgo/redlock/internal/scripts"
)

// MaxPermits is the largest limit TryAcquirePermit and AcquirePermit accept:
// each node scans the key's permits on every acquisition.
const MaxPermits = 1 << 16

// TryAcquirePermit makes one attempt to take one of limit permits of key
// for ttl, a counting semaphore: at most limit holders of key at once,
// across all Clients. It returns the permit as a *Lock, or an error wrapping
// ErrNotObtained (and ctx.Err() when ctx ended the attempt) with one
// *NodeError per node that did not agree: ErrTaken where every permit is
// held.
//
// A permit is one of limit slots of the semaphore, each held like an
// exclusive lock on its own: a majority of nodes must agree on the same
// slot, with the same validity rule as Lock, so no two holders ever hold the
// same slot and there are never more than limit holders. Each permit has its
// own token and expiry: Extend, Unlock, WithAutoExtend, Done/Err and
// WithFencing work on it as on a lock, and a crashed holder's permit frees
// itself at its TTL. Every caller of key must pass the same limit. The key
// holds a Redis hash on the nodes; it must not be used as a lock key too.
// WithFairness does not apply and is ignored. See docs/permits.md.
//
// limit must be between 1 and MaxPermits; ttl has the range of TryLock's;
// otherwise, or with a key TryLock refuses (empty or reserved), it returns an error without calling a
// node. The cleanup of a failed attempt runs in the background, each node
// call bounded by the node timeout.
func (c *Client) TryAcquirePermit(ctx context.Context, key string, limit int, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquirePermit(ctx, key, limit, ttl, opts, false)
}

// AcquirePermit takes one of limit permits of key for ttl (see
// TryAcquirePermit), waiting until it succeeds, the retry strategy
// (WithRetry) stops, ctx ends or the Client closes. Retry k is a new
// attempt, NextDelay(k) after the one before it, or at once when a
// holder's Unlock frees a permit, in any Client: a refused attempt
// registers the Client as a watcher of key on each node, in the same
// script, and the release there tells it (as for LockAll; see
// docs/permits.md). A permit freed by expiry is noticed by the next
// attempt, with the default strategy within 250ms plus one attempt; so is
// a wake-up lost with a listener's connection. On failure the error wraps
// ErrNotObtained, the per-node detail of the last attempt that ran to its
// decision and, when ctx ended the wait, ctx.Err(); it returns within ctx's
// deadline whatever the nodes do.
func (c *Client) AcquirePermit(ctx context.Context, key string, limit int, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.acquirePermit(ctx, key, limit, ttl, opts, true)
}

// errLimit is the error for a limit outside 1..MaxPermits.
var errLimit = errors.New("redlock: permit limit must be between 1 and MaxPermits")

func (c *Client) acquirePermit(ctx context.Context, key string, limit int, ttl time.Duration, opts []LockOption, wait bool) (*Lock, error) {
	done, err := c.begin()
	if err != nil {
		return nil, err
	}
	defer done()
	if limit < 1 || limit > MaxPermits {
		return nil, fmt.Errorf("%w (%d), got %d", errLimit, MaxPermits, limit)
	}
	lc, err := c.checkOwnerless(ctx, key, ttl, opts)
	if err != nil {
		return nil, err
	}
	return c.obtain(ctx, permitLease{key: key, limit: limit}, lc, wait)
}

// permitLease is a permit's leaseKind (permit_*.lua). slot is the slot an
// attempt tries first, and once agreed the permit's slot.
type permitLease struct {
	key   string
	limit int
	slot  string
}

func (p permitLease) enter(c *Client, token string, nodes []int) []node.Slot {
	return c.nodes.TakeAll(p.key, token, true, nodes)
}

func (p permitLease) take(ctx context.Context, c *Client, i int, token string, ttl time.Duration, heal bool, w nodeWatch, t *nodeTake) (bool, error) {
	only := "0"
	if heal {
		only = "1"
	}
	keys := []string{p.key, c.fenceKey(i, p.key)}
	args := []any{token, ttl.Milliseconds(), p.limit, p.slot, only, c.cfg.lockDelay.Milliseconds()}
	if w.keys != nil {
		keys = append(keys, w.keys[0])
		args = append(args, w.channel, w.lease)
	}
	v, err := c.nodes.Pool(i).Eval(ctx, scripts.PermitAcquire, keys, args...)
	if err != nil {
		return false, err
	}
	return parseTake(v, true, t)
}

func (p permitLease) extend(ctx context.Context, c *Client, i int, token string, ttl time.Duration) (int64, error) {
	v, err := c.nodes.Pool(i).Eval(ctx, scripts.PermitExtend, []string{p.key}, token, ttl.Milliseconds(), p.slot, c.cfg.lockDelay.Milliseconds())
	return asInt(v), err
}

func (p permitLease) releaser(c *Client, token string, _ any, wake bool) releaseCall {
	return releaseFunc(func(ctx context.Context, i int) (bool, error) {
		keys := []string{p.key}
		if wake {
			keys = append(keys, c.watchKeys(i, keys)...)
		}
		v, err := c.nodes.Pool(i).Eval(ctx, scripts.PermitRelease, keys, token, c.cfg.lockDelay.Milliseconds())
		return asInt(v) == 1, err
	})
}

func (p permitLease) raiseFence(ctx context.Context, c *Client, i int, token, fence string) (bool, error) {
	keys := []string{p.key, c.fenceKey(i, p.key)}
	v, err := c.nodes.Pool(i).Eval(ctx, scripts.PermitFence, keys, token, p.slot, fence)
	return asInt(v) == 1, err
}

func (p permitLease) watched() []string { return []string{p.key} }
func (p permitLease) places() bool      { return true }

// attempt starts each attempt at a random slot: concurrent acquirers then
// rarely want the same one, and nodes in the same state agree.
func (p permitLease) attempt() leaseKind {
	p.slot = strconv.Itoa(rand.N(p.limit))
	return p
}

func (p permitLease) placed(slot string) leaseKind {
	p.slot = slot
	return p
}

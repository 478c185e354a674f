package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redlockgo/redlock/internal/node"
	"github.com/redlockgo/redlock/internal/scripts"
)

// Re-entry: a hold named after its owner. Go has no goroutine identity, so
// the caller names the owner (a job id, a request id) with WithOwner, and
// a Lock, TryLock or Do by an owner that holds the key already adds a hold
// to the owner's instead of being refused. The key then holds the owner's
// value ('o:' + owner) and a hash next to it (keyspace.Standalone.Holds) each hold's
// expiry; the scripts (internal/scripts/owned_*.lua) check and change both
// in one step. An owner's lock is its own kind (owned), chosen once when
// the call starts: the plain exclusive kind does not look at owners.

// WithOwner names the owner of the hold that Lock, TryLock or Do takes: a
// job id, a request id, anything that says "the same logical holder" across
// the call stack (a goroutine has no identity to use). A call by an owner
// that holds the key already re-enters it: it gets a hold of its own (its
// own Token, Until, Extend and Unlock), counted with the owner's other
// holds on the nodes, and the key stays held until every hold was given
// back or ran out. A call by anyone else is refused while the owner holds
// the key, as for a plain lock; so is a plain Lock or TryLock.
//
// A hold is taken, by its own attempt, on the nodes where the key is free
// or holds the owner's value, and the attempt holds when a majority agrees
// on one of the two: all took it free (the owner's first hold), or all
// added to the owner's (a re-entry). A re-entry is therefore made only
// where the owner's earlier hold is still on a majority: it is a
// compare-and-extend, valid from the start of the call for ttl less the
// drift allowance, which never creates the owner's value on a node that
// lost it, and a mixed answer is refused unless the key is free on a
// majority (then it is a first hold, counted alone). The key's TTL on a
// node is the latest of the live holds' expiries there: a hold's Extend
// moves only its own, an Unlock gives back exactly its own hold (sent
// twice, it gives back nothing more), and a hold that ran out counts for
// nothing. With WithFencing every hold of an owner reports the owner's one
// fence, recorded with its first fenced hold.
//
// The owner's Lock and TryLock do not join the key's queue of waiters:
// they retry on the WithRetry schedule and are woken by an Unlock that
// frees the key, as LockAll is; WithFairness and WithHeal cannot be
// combined with WithOwner (an error). The last hold's Unlock releases the
// key as a plain Unlock does: it hands it to the first queued waiter, or
// wakes the watchers. Status reports the owner's value as the Token.
// Readers, permits, multi-locks and Resume take no owner (an error): see
// docs/design.md.
//
// An empty owner is an error.
func WithOwner(owner string) LockOption {
	return func(c *lockConfig) {
		if owner == "" {
			c.err = errors.New("redlock: empty owner")
			return
		}
		c.owner = owner
	}
}

// ownerPrefix begins the value an owner's key holds; a token never does
// (it is upper-case base32), nor the readers' marker.
const ownerPrefix = "o:"

// errOwnerKind is the error of an owner given to a call that takes none.
var errOwnerKind = errors.New("redlock: WithOwner applies to Lock, TryLock and Do only")

// The places of an owner's hold on a node (owned_take.lua's modes): nodes
// must agree on one.
const (
	ownedFresh = "fresh" // the key was free: the owner's first hold
	ownedAgain = "again" // the key held the owner's value: a re-entry
)

// lockOwned is TryLock (wait false) and Lock (wait true) with lc.owner:
// the engine's attempts with the owned kind (Client.obtain), paced by the
// retry strategy and woken by releases.
func (c *Client) lockOwned(ctx context.Context, key string, lc lockConfig, wait bool) (*Lock, error) {
	switch {
	case lc.fair:
		return nil, errors.New("redlock: WithFairness cannot be combined with WithOwner")
	case lc.heal:
		return nil, errors.New("redlock: WithHeal cannot be combined with WithOwner")
	}
	k := &owned{key: key, value: ownerPrefix + lc.owner, fencing: lc.fencing}
	return c.obtain(ctx, k, lc, wait)
}

// owned is the kind of an owner's hold (WithOwner). A Lock's token is its
// hold's id; value is what the key holds for the owner.
type owned struct {
	key     string
	value   string
	fencing bool
}

func (o *owned) enter(c *Client, token string, nodes []int) []node.Slot {
	return c.nodes.TakeAll(o.key, token, true, nodes)
}

// take runs OwnedTake on node i: t.place is the node's mode, t.counter the
// fence counter read (for a re-entry of a fenced owner, one less than the
// owner's fence, so that phase 2 picks the owner's fence again).
func (o *owned) take(ctx context.Context, c *Client, i int, token string, ttl time.Duration, _ bool, w nodeWatch, t *nodeTake) (bool, error) {
	n := c.nodes.Names(i)
	watch, channel := n.Watch(o.key), ""
	if w.keys != nil {
		watch, channel = w.keys[0], w.channel
	}
	fencing := "0"
	if o.fencing {
		fencing = "1"
	}
	keys := []string{o.key, n.Holds(o.key), n.Fence(o.key), n.Held(o.key), watch}
	r, err := c.nodes.Pool(i).Eval(ctx, scripts.OwnedTake, keys,
		o.value, token, ttl.Milliseconds(), c.cfg.lockDelay.Milliseconds(), fencing, channel, w.lease)
	if err != nil {
		return false, err
	}
	arr, _ := r.([]any)
	if len(arr) == 0 {
		return false, errMalformed
	}
	if err := takeRefusal(arr); err != nil {
		return false, err
	}
	switch {
	case asInt(arr[0]) != scripts.OwnedTaken:
		return false, nil
	case len(arr) < 4:
		return false, errMalformed
	}
	t.place, _ = arr[1].(string)
	return true, ownedCounter(arr[2], arr[3], t)
}

// ownedCounter records in t the counter phase 1 of fencing reads on a node:
// the fence counter, or for a re-entry of an owner with a fence, that fence
// less one. A number that cannot be read fails the node, whose hold the
// attempt's cleanup then gives back.
func ownedCounter(counter, fence any, t *nodeTake) error {
	if f, _ := fence.(string); f != "" && t.place == ownedAgain {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil || n == 0 {
			return fmt.Errorf("redlock: the owner's fence is not a number: %q", f)
		}
		t.counter = n - 1
		return nil
	}
	n, err := parseCounter(counter, "")
	t.counter = n
	return err
}

func (o *owned) extend(ctx context.Context, c *Client, i int, token string, ttl time.Duration) (int64, error) {
	n := c.nodes.Names(i)
	r, err := c.nodes.Pool(i).Eval(ctx, scripts.OwnedExtend, []string{o.key, n.Holds(o.key), n.Held(o.key)},
		o.value, token, ttl.Milliseconds(), c.cfg.lockDelay.Milliseconds())
	return asInt(r), err
}

// releaser builds OwnedRelease's keys (Release's) and arguments once, for
// every node: Release's, with the owner's value for the token and the
// hold's id last.
func (o *owned) releaser(c *Client, token string, _ any, wake bool) releaseCall {
	args := c.releaseArgs(make([]any, 0, 6), o.value, "")
	if wake {
		args = append(args, "wake")
	}
	return &ownedRelease{c: c, keys: c.releaseKeys(o.key), args: append(args, token)}
}

// ownedRelease is one hold of an owner given back.
type ownedRelease struct {
	c    *Client
	keys [][]string // on each node
	args []any
}

// release reports whether the node gave the hold back: the key released
// (and maybe handed to a waiter, which hears of it as after Release) or
// the owner's other holds kept.
func (r *ownedRelease) release(ctx context.Context, i int) (bool, error) {
	code, err := r.c.releaseWith(ctx, i, scripts.OwnedRelease, r.keys[i], r.args)
	return code == 1 || code == scripts.OwnedReturned, err
}

func (o *owned) raiseFence(ctx context.Context, c *Client, i int, token, fence string) (bool, error) {
	n := c.nodes.Names(i)
	r, err := c.nodes.Pool(i).Eval(ctx, scripts.OwnedFence, []string{o.key, n.Holds(o.key), n.Fence(o.key)}, o.value, token, fence)
	return asInt(r) == 1, err
}

func (o *owned) watched() []string       { return []string{o.key} }
func (o *owned) places() bool            { return true }
func (o *owned) attempt() leaseKind      { return o }
func (o *owned) placed(string) leaseKind { return o }

// isOwnerValue reports whether token is an owner's value rather than a
// hold's token: Resume refuses it, since carrying on with the owner's value
// would give back every hold of the owner at once.
func isOwnerValue(token string) bool { return strings.HasPrefix(token, ownerPrefix) }

// checkOwnerless is check for the acquisitions that take no owner
// (readers, permits, multi-locks): WithOwner is an error there.
func (c *Client) checkOwnerless(ctx context.Context, key string, ttl time.Duration, opts []LockOption) (lockConfig, error) {
	lc, err := c.check(ctx, key, ttl, opts)
	if err == nil && lc.owner != "" {
		err = errOwnerKind
	}
	return lc, err
}

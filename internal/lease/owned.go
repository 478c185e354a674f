package lease

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redlockgo/redlock/internal/node"
	"github.com/redlockgo/redlock/internal/scripts"
)

// Owned is the kind of an owner's hold (WithOwner, owned_*.lua). A lock's
// token is its hold's id; value is what the key holds for the owner.
type Owned struct {
	key     string
	value   string
	fencing bool
}

// OwnerPrefix begins the value an owner's key holds; a token never does
// (it is upper-case base32), nor the readers' marker.
const OwnerPrefix = "o:"

// NewOwned returns the kind of owner's holds of key, fenced or not.
func NewOwned(key, owner string, fencing bool) *Owned {
	return &Owned{key: key, value: OwnerPrefix + owner, fencing: fencing}
}

// IsOwnerValue reports whether token is an owner's value rather than a
// hold's token.
func IsOwnerValue(token string) bool { return strings.HasPrefix(token, OwnerPrefix) }

// The places of an owner's hold on a node (owned_take.lua's modes): nodes
// must agree on one.
const (
	OwnedFresh = "fresh" // the key was free: the owner's first hold
	OwnedAgain = "again" // the key held the owner's value: a re-entry
)

// Enter implements Kind.
func (o *Owned) Enter(e *Env, token string, nodes []int) []node.Slot {
	return e.Nodes.TakeAll(o.key, token, true, nodes)
}

// Take runs OwnedTake on node i: t.Place is the node's mode, t.Counter the
// fence counter read (for a re-entry of a fenced owner, one less than the
// owner's fence, so that phase 2 picks the owner's fence again).
func (o *Owned) Take(ctx context.Context, e *Env, i int, token string, ttl time.Duration, _ bool, w Watch, t *Take) (bool, error) {
	n := e.Nodes.Names(i)
	watch, channel := n.Watch(o.key), ""
	if w.Keys != nil {
		watch, channel = w.Keys[0], w.Channel
	}
	keys := []string{o.key, n.Holds(o.key), n.Fence(o.key), n.Held(o.key), watch}
	r, err := e.Nodes.Pool(i).Eval(ctx, scripts.OwnedTake, keys,
		e.withCeiling([]any{o.value, token, ttl.Milliseconds(), e.delay(), flag(o.fencing), channel, w.Lease}, i)...)
	if err != nil {
		return false, err
	}
	return readOwnedTake(r, t)
}

// readOwnedTake reads OwnedTake's reply: {OwnedTaken, place, counter,
// fence}, {OwnedRefused}, or a refusal (readRefusal).
func readOwnedTake(r any, t *Take) (bool, error) {
	arr, err := array(r)
	if err != nil {
		return false, err
	}
	if err := readRefusal(arr); err != nil {
		return false, err
	}
	switch {
	case Int(arr[0]) != scripts.OwnedTaken:
		return false, nil
	case len(arr) < 4:
		return false, ErrMalformed
	}
	t.Place, _ = arr[1].(string)
	return true, ownedCounter(arr[2], arr[3], t)
}

// ownedCounter records in t the counter phase 1 of fencing reads on a node:
// the fence counter, or for a re-entry of an owner with a fence, that fence
// less one. A number that cannot be read fails the node, whose hold the
// attempt's cleanup then gives back.
func ownedCounter(counter, fence any, t *Take) error {
	if f, _ := fence.(string); f != "" && t.Place == OwnedAgain {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil || n == 0 {
			return fmt.Errorf("redlock: the owner's fence is not a number: %q", f)
		}
		t.Counter = n - 1
		return nil
	}
	n, err := Counter(counter, "")
	t.Counter = n
	return err
}

// Extend implements Kind: the hold's own expiry.
func (o *Owned) Extend(ctx context.Context, e *Env, i int, token string, ttl time.Duration) (int64, error) {
	n := e.Nodes.Names(i)
	r, err := e.Nodes.Pool(i).Eval(ctx, scripts.OwnedExtend, []string{o.key, n.Holds(o.key), n.Held(o.key)},
		e.withCeiling([]any{o.value, token, ttl.Milliseconds(), e.delay()}, i)...)
	return Int(r), err
}

// Releaser builds OwnedRelease's keys (Release's) and arguments once, for
// every node: Release's, with the owner's value for the token and the
// hold's id last.
func (o *Owned) Releaser(e *Env, token string, _ any, wake bool) Release {
	args := e.releaseArgs(make([]any, 0, 6), o.value, "", wake)
	return &ownedRelease{e: e, keys: e.QueueKeys(o.key), args: append(args, token)}
}

// ownedRelease is one hold of an owner given back.
type ownedRelease struct {
	e    *Env
	keys [][]string // on each node
	args []any
}

// Release reports whether the node gave the hold back: the key released
// (and maybe handed to a waiter, which hears of it as after Release) or
// the owner's other holds kept.
func (r *ownedRelease) Release(ctx context.Context, i int) (bool, error) {
	v, err := r.e.Nodes.Pool(i).Eval(ctx, scripts.OwnedRelease, r.keys[i], r.e.withCeiling(r.args, i)...)
	code, err := r.e.readRelease(i, v, err)
	return code == 1 || code == scripts.OwnedReturned, err
}

// RaiseFence implements Kind, and records the owner's fence.
func (o *Owned) RaiseFence(ctx context.Context, e *Env, i int, token, fence string) (bool, error) {
	n := e.Nodes.Names(i)
	r, err := e.Nodes.Pool(i).Eval(ctx, scripts.OwnedFence, []string{o.key, n.Holds(o.key), n.Fence(o.key)}, o.value, token, fence)
	return Int(r) == 1, err
}

// Watched implements Kind.
func (o *Owned) Watched() []string { return []string{o.key} }

// Places implements Kind: a first hold or a re-entry.
func (o *Owned) Places() bool { return true }

// Attempt implements Kind.
func (o *Owned) Attempt() Kind { return o }

// Placed implements Kind.
func (o *Owned) Placed(string) Kind { return o }

// Token implements Kind.
func (o *Owned) Token() string { return NewToken() }

package redlock

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redlockgo/redlock/internal/node"
	"github.com/redlockgo/redlock/internal/scripts"
)

// exclusive is the exclusive lock's kind (TryLock, Lock, Do): SET NX PX
// on each node, or the fenced or delayed SET its mode names, chosen once
// when the lock starts.
type exclusive struct {
	key  string
	mode setMode
}

// setMode is how an exclusive lock sets its key.
type setMode uint8

const (
	plainSet   setMode = iota // SET NX PX
	fencedSet                 // AcquireFenced: the key and its fence counter (WithFencing)
	delayedSet                // AcquireDelay: the key and its holder marker (WithLockDelay)
)

// exclusiveKind returns the kind of an exclusive lock on key under lc. Its
// methods take a pointer, so that handing it on as a leaseKind allocates
// nothing: a Lock keeps it in its ex field.
func (c *Client) exclusiveKind(key string, lc lockConfig) exclusive {
	switch {
	case lc.fencing:
		return exclusive{key: key, mode: fencedSet}
	case c.cfg.lockDelay > 0:
		return exclusive{key: key, mode: delayedSet}
	}
	return exclusive{key: key, mode: plainSet}
}

func (e *exclusive) enter(c *Client, token string, nodes []int) []node.Slot {
	return c.nodes.TakeAll(e.key, token, true, nodes)
}

func (e *exclusive) take(ctx context.Context, c *Client, i int, token string, ttl time.Duration, heal bool, _ nodeWatch, t *nodeTake) (bool, error) {
	switch {
	case e.mode == fencedSet && !heal:
		return c.setFenced(ctx, i, e.key, token, ttl, &t.counter)
	case e.mode != plainSet && c.cfg.lockDelay > 0:
		return c.setDelayed(ctx, i, e.key, token, ttl) // our own marker does not refuse
	}
	return c.nodes.Pool(i).SetNX(ctx, e.key, token, ttl)
}

func (e *exclusive) extend(ctx context.Context, c *Client, i int, token string, ttl time.Duration) (int64, error) {
	keys := c.withHeld([]string{e.key}, i, e.key)
	r, err := c.nodes.Pool(i).Eval(ctx, scripts.Extend, keys, c.withDelay([]any{token, ttl.Milliseconds()})...)
	return asInt(r), err
}

// releaser builds Release's keys and arguments once, for every node, in
// one allocation.
func (e *exclusive) releaser(c *Client, token string, keep any, wake bool) releaseCall {
	r := &exclusiveRelease{c: c, keys: c.releaseKeys(e.key)}
	r.args = c.releaseArgs(r.buf[:0], token, keep)
	if wake {
		r.args = append(r.args, "wake") // an Unlock wakes the key's watchers (release.lua, internal/wait/watch.go)
	}
	return r
}

// exclusiveRelease is one Release of an exclusive lock's token.
type exclusiveRelease struct {
	c    *Client
	keys [][]string // on each node
	args []any
	buf  [5]any // args' storage
}

func (r *exclusiveRelease) release(ctx context.Context, i int) (bool, error) {
	return r.c.releaseOn(ctx, i, r.keys[i], r.args)
}

func (e *exclusive) raiseFence(ctx context.Context, c *Client, i int, token, fence string) (bool, error) {
	r, err := c.nodes.Pool(i).Eval(ctx, scripts.FenceRaise, []string{e.key, c.fenceKey(i, e.key)}, token, fence)
	return asInt(r) == 1, err
}

func (e *exclusive) watched() []string       { return []string{e.key} }
func (e *exclusive) places() bool            { return false }
func (e *exclusive) attempt() leaseKind      { return e }
func (e *exclusive) placed(string) leaseKind { return e }

// multi is a multi-lock's kind (TryLockAll, LockAll, DoAll): every key set
// to the token on a node in one script, or none (acquire_all.lua). keys
// are sorted and checked; fencing is WithFencing, chosen when the lock
// starts.
type multi struct {
	keys    []string
	fencing bool
}

func (m multi) enter(c *Client, token string, nodes []int) []node.Slot {
	return c.nodes.TakeKeys(m.keys, token, nodes)
}

// take runs AcquireAll on node i; with fencing it records the largest of
// the keys' counters. A refusal names the key the node found held, which w
// then watches.
func (m multi) take(ctx context.Context, c *Client, i int, token string, ttl time.Duration, heal bool, w nodeWatch, t *nodeTake) (bool, error) {
	fencing := m.fencing && !heal
	ks, args := m.takeCall(c, i, token, ttl, fencing, w)
	r, err := c.nodes.Pool(i).Eval(ctx, scripts.AcquireAll, ks, args...)
	if err != nil {
		return false, err
	}
	arr, _ := r.([]any)
	if len(arr) == 0 {
		return false, errMalformed
	}
	switch asInt(arr[0]) {
	case scripts.AcquireAllSet:
		if !fencing {
			return true, nil
		}
		return m.counters(c, i, arr[1:], t)
	case scripts.OtherKind:
		if len(arr) > 2 {
			k := int(asInt(arr[2]))
			if k < 1 || k > len(m.keys) {
				return false, errMalformed
			}
			return false, kindError(arr[1], m.keys[k-1])
		}
	case scripts.TakeDelayed:
		if len(arr) > 2 {
			t.held = m.key(arr[2])
			return false, delayError(time.Duration(max(asInt(arr[1]), 0)) * time.Millisecond)
		}
	}
	if len(arr) > 1 {
		t.held = m.key(arr[1]) // the key found held
	}
	return false, nil
}

// takeCall returns AcquireAll's KEYS and ARGV on node i: the keys, their
// holder markers under a lock-delay, their fence counters when fencing,
// and the waiter's watch sets when w has them.
func (m multi) takeCall(c *Client, i int, token string, ttl time.Duration, fencing bool, w nodeWatch) ([]string, []any) {
	delay := c.cfg.lockDelay > 0
	ks := m.keys
	args := []any{token, ttl.Milliseconds(), len(m.keys), c.cfg.lockDelay.Milliseconds()}
	if fencing || delay || w.keys != nil {
		ks = make([]string, 0, 4*len(m.keys))
		ks = append(ks, m.keys...)
	}
	n := c.nodes.Names(i)
	if delay {
		for _, k := range m.keys {
			ks = append(ks, n.Held(k))
		}
	}
	if fencing {
		for _, k := range m.keys {
			ks = append(ks, n.Fence(k))
		}
	}
	if w.keys != nil {
		ks = append(ks, w.keys...)
		args = append(args, w.channel, w.lease)
	}
	return ks, args
}

// key returns the key a reply names by its 1-based index, or "" for an
// index out of range.
func (m multi) key(v any) string {
	if k := int(asInt(v)); k > 0 && k <= len(m.keys) {
		return m.keys[k-1]
	}
	return ""
}

// counters records in t the highest of the fence counters node i read, one
// per key. A counter that is not a number fails the node: the keys are
// ours, so the attempt's cleanup releases them.
func (m multi) counters(c *Client, i int, replies []any, t *nodeTake) (bool, error) {
	if len(replies) != len(m.keys) {
		return false, errors.New("redlock: malformed fence reply")
	}
	var top uint64
	for j, v := range replies {
		n, err := parseCounter(v, c.fenceKey(i, m.keys[j]))
		if err != nil {
			return false, err
		}
		top = max(top, n)
	}
	t.counter = top
	return true, nil
}

func (m multi) extend(ctx context.Context, c *Client, i int, token string, ttl time.Duration) (int64, error) {
	ks := m.keys
	if c.cfg.lockDelay > 0 {
		n := c.nodes.Names(i)
		ks = make([]string, 0, 2*len(m.keys))
		ks = append(ks, m.keys...)
		for _, k := range m.keys {
			ks = append(ks, n.Held(k))
		}
	}
	r, err := c.nodes.Pool(i).Eval(ctx, scripts.ExtendAll, ks, token, ttl.Milliseconds(), c.cfg.lockDelay.Milliseconds())
	return asInt(r), err
}

// releaser runs ReleaseAll. A node counts as released, for an Unlock (wake),
// when it held every key with the token; for a cleanup, when it held any.
func (m multi) releaser(c *Client, token string, _ any, wake bool) releaseCall {
	return releaseFunc(func(ctx context.Context, i int) (bool, error) {
		n, err := c.releaseAllOn(ctx, i, m.keys, token, wake)
		if wake {
			return n == len(m.keys), err
		}
		return n > 0, err
	})
}

// raiseFence runs FenceRaiseAll over every key's counter.
func (m multi) raiseFence(ctx context.Context, c *Client, i int, token, fence string) (bool, error) {
	ks := make([]string, 0, 2*len(m.keys))
	ks = append(ks, m.keys...)
	n := c.nodes.Names(i)
	for _, k := range m.keys {
		ks = append(ks, n.Fence(k))
	}
	r, err := c.nodes.Pool(i).Eval(ctx, scripts.FenceRaiseAll, ks, token, fence, len(m.keys))
	return asInt(r) == 1, err
}

func (m multi) watched() []string       { return m.keys }
func (m multi) places() bool            { return false }
func (m multi) attempt() leaseKind      { return m }
func (m multi) placed(string) leaseKind { return m }

// releaseAllOn runs ReleaseAll on node i and returns how many keys it
// deleted; the waiters of this Client it handed keys to hear of it at once.
// With wake (an Unlock), the keys it leaves free wake their watchers.
func (c *Client) releaseAllOn(ctx context.Context, i int, keys []string, token string, wake bool) (int, error) {
	ks, args := c.queueKeysAll(i, keys), []any{token, len(keys), c.cfg.lockDelay.Milliseconds()}
	if wake {
		ks = append(ks, c.watchKeys(i, keys)...)
	}
	v, err := c.nodes.Pool(i).Eval(ctx, scripts.ReleaseAll, ks, args...)
	if err != nil {
		return 0, err
	}
	arr, _ := v.([]any)
	if len(arr) == 0 {
		return 0, errMalformed
	}
	for j := 1; j+1 < len(arr); j += 2 {
		if next, ok := arr[j].(string); ok {
			c.waits.Grants.Deliver(next, i, int(asInt(arr[j+1])))
		}
	}
	return int(asInt(arr[0])), nil
}

// multiPrefix begins a multi-lock's token; no exclusive lock's token does
// (newToken spells base32, in capitals), so Resume can refuse it.
const multiPrefix = "m:"

// isMultiToken reports whether token is a multi-lock's.
func isMultiToken(token string) bool { return strings.HasPrefix(token, multiPrefix) }

// tokenPrefixer is a kind whose tokens say what they are (multi).
type tokenPrefixer interface{ tokenPrefix() string }

// tokenPrefix implements tokenPrefixer.
func (multi) tokenPrefix() string { return multiPrefix }

// kindToken returns a new token for an attempt of kind k.
func kindToken(k leaseKind) string {
	if p, ok := k.(tokenPrefixer); ok {
		return p.tokenPrefix() + newToken()
	}
	return newToken()
}

package lease

import (
	"context"
	"strings"
	"time"

	"github.com/redlockgo/redlock/internal/node"
	"github.com/redlockgo/redlock/internal/scripts"
)

// Multi is a multi-lock's kind (TryLockAll, LockAll, DoAll): every key set
// to the token on a node in one script, or none (acquire_all.lua). Its
// keys are sorted and checked by the caller. A waiting multi-lock
// (LockAll) also has a waiter id and a ticket, for the whole call: its
// attempts keep its place in every key's queue of waiters (queue.lua).
type Multi struct {
	keys    []string
	fencing bool
	waiter  string // QueuePrefix and a token: the call's place in the queues ("": none)
	ticket  int64  // the call's arrival, in µs: its order in the queues
}

// NewMulti returns the kind of a multi-lock on keys, fenced or not.
func NewMulti(keys []string, fencing bool) Multi { return Multi{keys: keys, fencing: fencing} }

// Waiting returns m for a call that waits in the keys' queues from ticket
// (its arrival, in µs, as a Lock waiter's ticket): its attempts join every
// key's queue, reserve the free keys whose queue they head, and take all
// the keys once each is free to them (acquire_all.lua).
func (m Multi) Waiting(ticket int64) Multi {
	m.waiter, m.ticket = QueuePrefix+NewToken(), ticket
	return m
}

// Waiter returns the id of m's place in the queues: the token whose
// release (ReleaseAll with a keep) takes it out of them. "" when m does
// not wait.
func (m Multi) Waiter() string { return m.waiter }

// QueuePrefix begins a waiting multi-lock's id in the keys' queues, and
// the value of a key reserved for it; no lock's token begins with it.
const QueuePrefix = "q:"

// MultiPrefix begins a multi-lock's token; no other kind's token does
// (NewToken spells base32, in capitals), so Resume can refuse it.
const MultiPrefix = "m:"

// IsMultiToken reports whether token is a multi-lock's.
func IsMultiToken(token string) bool { return strings.HasPrefix(token, MultiPrefix) }

// Enter implements Kind: one step takes every key's place.
func (m Multi) Enter(e *Env, token string, nodes []int) []node.Slot {
	return e.Nodes.TakeKeys(m.keys, token, nodes)
}

// Take runs AcquireAll on node i; with fencing it records the largest of
// the keys' counters. A refusal names the key the node found held, which w
// then watches.
func (m Multi) Take(ctx context.Context, e *Env, i int, token string, ttl time.Duration, heal bool, w Watch, t *Take) (bool, error) {
	fencing := m.fencing && !heal
	ks, args := m.takeCall(e, i, token, ttl, fencing, w)
	r, err := e.Nodes.Pool(i).Eval(ctx, scripts.AcquireAll, ks, args...)
	if err != nil {
		return false, err
	}
	return m.readTake(e, i, r, fencing, t)
}

// readTake reads AcquireAll's reply: {AcquireAllSet, counters...},
// {OtherKind, kind, index}, {TakeDelayed, pttl, index} or {0, index}, the
// index naming the key found held.
func (m Multi) readTake(e *Env, i int, r any, fencing bool, t *Take) (bool, error) {
	arr, err := array(r)
	if err != nil {
		return false, err
	}
	switch Int(arr[0]) {
	case scripts.AcquireAllSet:
		if !fencing {
			return true, nil
		}
		return m.counters(e, i, arr[1:], t)
	case scripts.OtherKind:
		if len(arr) > 2 {
			k := m.key(arr[2])
			if k == "" {
				return false, ErrMalformed
			}
			return false, KindError(arr[1], k)
		}
	case scripts.TakeDelayed:
		if len(arr) > 2 {
			t.Held = m.key(arr[2])
			return false, DelayError(millis(arr[1]))
		}
	}
	if len(arr) > 1 {
		t.Held = m.key(arr[1]) // the key found held
	}
	return false, nil
}

// takeCall returns AcquireAll's KEYS and ARGV on node i: the keys, their
// holder markers under a lock-delay, their fence counters when fencing,
// the waiter's watch sets when w has them, and the keys' queues when m
// waits and w gives its place a lease.
func (m Multi) takeCall(e *Env, i int, token string, ttl time.Duration, fencing bool, w Watch) ([]string, []any) {
	delay := e.Delay > 0
	queued := m.waiter != "" && w.Queue > 0
	ks := m.keys
	args := []any{token, ttl.Milliseconds(), len(m.keys), e.delay()}
	if fencing || delay || w.Keys != nil || queued {
		ks = make([]string, 0, 8*len(m.keys))
		ks = append(ks, m.keys...)
	}
	n := e.Nodes.Names(i)
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
	if w.Keys != nil {
		ks = append(ks, w.Keys...)
		args = append(args, w.Channel, w.Lease)
	}
	if queued {
		if w.Keys == nil {
			args = append(args, "", 0)
		}
		for _, k := range m.keys {
			ks = append(ks, n.Queue(k)[1:5]...) // queue, leases, entries, departed
		}
		args = append(args, m.waiter, m.ticket, w.Queue)
	}
	return ks, e.withCeiling(args, i)
}

// key returns the key a reply names by its 1-based index, or "" for an
// index out of range.
func (m Multi) key(v any) string {
	if k := int(Int(v)); k > 0 && k <= len(m.keys) {
		return m.keys[k-1]
	}
	return ""
}

// counters records in t the highest of the fence counters node i read, one
// per key. A counter that is not a number fails the node: the keys are
// ours, so the attempt's cleanup releases them.
func (m Multi) counters(e *Env, i int, replies []any, t *Take) (bool, error) {
	if len(replies) != len(m.keys) {
		return false, ErrMalformed
	}
	var top uint64
	for j, v := range replies {
		n, err := Counter(v, e.fence(i, m.keys[j]))
		if err != nil {
			return false, err
		}
		top = max(top, n)
	}
	t.Counter = top
	return true, nil
}

// Extend implements Kind: every key, only while every key holds the token.
func (m Multi) Extend(ctx context.Context, e *Env, i int, token string, ttl time.Duration) (int64, error) {
	ks := m.keys
	if e.Delay > 0 {
		n := e.Nodes.Names(i)
		ks = make([]string, 0, 2*len(m.keys))
		ks = append(ks, m.keys...)
		for _, k := range m.keys {
			ks = append(ks, n.Held(k))
		}
	}
	r, err := e.Nodes.Pool(i).Eval(ctx, scripts.ExtendAll, ks, e.withCeiling([]any{token, ttl.Milliseconds(), e.delay()}, i)...)
	return Int(r), err
}

// Releaser runs ReleaseAll. A node counts as released, for an Unlock
// (wake), when it held every key with the token; for a cleanup, when it
// held any. With keep (ms, for a waiting multi-lock's id: Waiter), the
// token leaves the keys' queues and is remembered as departed for keep;
// a key reserved for it that this leaves free wakes its watchers, as an
// Unlock's would: the release that reserved it woke nobody, and the
// call's own watch entries go with that set.
func (m Multi) Releaser(e *Env, token string, keep any, wake bool) Release {
	if keep == nil {
		keep = ""
	}
	leaving := keep != ""
	return releaseFunc(func(ctx context.Context, i int) (bool, error) {
		ks := e.queueKeysAll(i, m.keys)
		if wake || leaving {
			ks = append(ks, e.WatchKeys(i, m.keys)...)
		}
		v, err := e.Nodes.Pool(i).Eval(ctx, scripts.ReleaseAll, ks, e.withCeiling([]any{token, len(m.keys), e.delay(), keep}, i)...)
		n, err := e.readRelease(i, v, err)
		if wake {
			return int(n) == len(m.keys), err
		}
		return n > 0, err
	})
}

// RaiseFence runs FenceRaiseAll over every key's counter.
func (m Multi) RaiseFence(ctx context.Context, e *Env, i int, token, fence string) (bool, error) {
	ks := make([]string, 0, 2*len(m.keys))
	ks = append(ks, m.keys...)
	n := e.Nodes.Names(i)
	for _, k := range m.keys {
		ks = append(ks, n.Fence(k))
	}
	r, err := e.Nodes.Pool(i).Eval(ctx, scripts.FenceRaiseAll, ks, token, fence, len(m.keys))
	return Int(r) == 1, err
}

// Watched implements Kind.
func (m Multi) Watched() []string { return m.keys }

// Places implements Kind.
func (m Multi) Places() bool { return false }

// Attempt implements Kind.
func (m Multi) Attempt() Kind { return m }

// Placed implements Kind.
func (m Multi) Placed(string) Kind { return m }

// Token implements Kind: a multi-lock's token says what it is.
func (m Multi) Token() string { return MultiPrefix + NewToken() }

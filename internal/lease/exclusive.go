package lease

import (
	"context"
	"crypto/rand"
	"time"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/internal/node"
	"github.com/redlockgo/redlock/internal/scripts"
	"github.com/redlockgo/redlock/internal/wait"
)

// NewToken returns a random token: 128 bits or more from crypto/rand.
func NewToken() string { return rand.Text() }

// Exclusive is the exclusive lock's kind (TryLock, Lock, Do): SET NX PX on
// each node, or the fenced or delayed SET its mode names, chosen once when
// the lock starts. Its methods take a pointer, so that handing it on as a
// Kind allocates nothing when the value lives in the lock.
type Exclusive struct {
	key      string
	mode     setMode
	election bool // an election's key: its leader record follows its TTL
}

// setMode is how an exclusive lock sets its key.
type setMode uint8

const (
	plainSet   setMode = iota // SET NX PX
	fencedSet                 // AcquireFenced: the key and its fence counter (WithFencing)
	delayedSet                // AcquireDelay: the key and its holder marker (WithLockDelay)
)

// NewExclusive returns the kind of an exclusive lock on key: fenced, or
// under the lock-delay of an Env whose Delay is set (delay), or plain.
func NewExclusive(key string, fencing, delay bool) Exclusive {
	switch {
	case fencing:
		return Exclusive{key: key, mode: fencedSet}
	case delay:
		return Exclusive{key: key, mode: delayedSet}
	}
	return Exclusive{key: key, mode: plainSet}
}

// NewElection returns the kind of an election's lock on its key (fenced:
// the term is the fence): as NewExclusive, and each extension carries the
// election's leader record (leader_set.lua) to the key's new TTL, so that
// the record lives as long as the leadership and no longer.
func NewElection(key string, delay bool) Exclusive {
	x := NewExclusive(key, true, delay)
	x.election = true
	return x
}

// Key returns the lock's key.
func (x *Exclusive) Key() string { return x.key }

// Enter implements Kind.
func (x *Exclusive) Enter(e *Env, token string, nodes []int) []node.Slot {
	return e.Nodes.TakeAll(x.key, token, true, nodes)
}

// Take implements Kind. A heal sets the key alone: its fence is the
// lock's, recorded already.
func (x *Exclusive) Take(ctx context.Context, e *Env, i int, token string, ttl time.Duration, heal bool, _ Watch, t *Take) (bool, error) {
	switch {
	case x.mode == fencedSet && !heal:
		return e.setFenced(ctx, i, x.key, token, ttl, t)
	case x.mode != plainSet && e.Delay > 0:
		return e.setDelayed(ctx, i, x.key, token, ttl) // our own marker does not refuse
	case e.Nodes.Names(i).Ceiling() != "":
		return e.setNX(ctx, i, x.key, token, ttl) // ceiling.go
	}
	return e.Nodes.Pool(i).SetNX(ctx, x.key, token, ttl) // a cluster node: no ceiling
}

// setFenced is phase 1 of fencing on node i: SET NX PX and read the
// counter, recorded in t.
func (e *Env) setFenced(ctx context.Context, i int, key, token string, ttl time.Duration, t *Take) (bool, error) {
	keys := e.withHeld([]string{key, e.fence(i, key)}, i, key)
	r, err := e.Nodes.Pool(i).Eval(ctx, scripts.AcquireFenced, keys, e.withCeiling(e.withDelay([]any{token, ttl.Milliseconds()}), i)...)
	if err != nil {
		return false, err
	}
	ok, rest, err := readSet(r)
	if !ok || err != nil {
		return false, err
	}
	if len(rest) < 1 {
		return false, ErrMalformed
	}
	t.Counter, err = Counter(rest[0], e.fence(i, key))
	return err == nil, err
}

// setDelayed is the lock-delay's SET NX PX on node i: it sets key and its
// holder marker, or refuses with an error wrapping ErrLockDelay.
func (e *Env) setDelayed(ctx context.Context, i int, key, token string, ttl time.Duration) (bool, error) {
	r, err := e.Nodes.Pool(i).Eval(ctx, scripts.AcquireDelay, []string{key, e.Nodes.Names(i).Held(key)},
		e.withCeiling([]any{token, ttl.Milliseconds(), e.delay()}, i)...)
	if err != nil {
		return false, err
	}
	ok, _, err := readSet(r)
	return ok, err
}

// Extend implements Kind.
func (x *Exclusive) Extend(ctx context.Context, e *Env, i int, token string, ttl time.Duration) (int64, error) {
	keys := e.withHeld([]string{x.key}, i, x.key)
	if x.election {
		keys = append(keys, e.Nodes.Names(i).Leader(x.key))
	}
	r, err := e.Nodes.Pool(i).Eval(ctx, scripts.Extend, keys, e.withCeiling(e.withDelay([]any{token, ttl.Milliseconds()}), i)...)
	return Int(r), err
}

// Releaser implements Kind: Release's keys and arguments are built once,
// for every node, in one allocation.
func (x *Exclusive) Releaser(e *Env, token string, keep any, wake bool) Release {
	r := &exclusiveRelease{e: e, keys: e.QueueKeys(x.key)}
	r.args = e.releaseArgs(r.buf[:0], token, keep, wake)
	r.ceiled = append(r.args, r.e.MaxTTL.Milliseconds(), keyspace.Ceiling) // in buf: no allocation of its own
	return r
}

// exclusiveRelease is one Release of an exclusive lock's token.
type exclusiveRelease struct {
	e      *Env
	keys   [][]string // on each node
	args   []any
	ceiled []any  // args, the max TTL and the ceiling: for a node that keeps one
	buf    [7]any // the storage of both
}

// Release reports whether the key held the token on node i; a waiter of
// this Client the node handed the key to hears of it from the reply.
func (r *exclusiveRelease) Release(ctx context.Context, i int) (bool, error) {
	args := r.args
	if r.e.Nodes.Names(i).Ceiling() != "" {
		args = r.ceiled
	}
	v, err := r.e.Nodes.Pool(i).Eval(ctx, scripts.Release, r.keys[i], args...)
	code, err := r.e.readRelease(i, v, err)
	return code == 1, err
}

// RaiseFence implements Kind.
func (x *Exclusive) RaiseFence(ctx context.Context, e *Env, i int, token, fence string) (bool, error) {
	r, err := e.Nodes.Pool(i).Eval(ctx, scripts.FenceRaise, []string{x.key, e.fence(i, x.key)}, token, fence)
	return Int(r) == 1, err
}

// ReadFence is phase 1 of fencing for a lock that holds already (handed
// over by the queue, or resumed): it reads the fence counter on node i
// while the key holds token, into t.
func (x *Exclusive) ReadFence(ctx context.Context, e *Env, i int, token string, t *Take) (bool, error) {
	r, err := e.Nodes.Pool(i).Eval(ctx, scripts.FenceRead, []string{x.key, e.fence(i, x.key)}, token)
	if err != nil || r == nil {
		return false, err
	}
	t.Counter, err = Counter(r, e.fence(i, x.key))
	return err == nil, err
}

// Enqueue is a waiter's round on node i (enqueue.lua): keys are
// QueueKeys' for the node; it takes the key for the waiter when it is free
// and the waiter is first (mayTake), else refreshes its place. The reply
// is read into r.
func (x *Exclusive) Enqueue(ctx context.Context, e *Env, i int, keys []string, w *wait.Waiter, seq int, channel string, mayTake bool, r *wait.Reply) error {
	take := "0"
	if mayTake {
		take = "1"
	}
	v, err := e.Nodes.Pool(i).Eval(ctx, scripts.Enqueue, keys, e.withCeiling(e.withDelay([]any{w.Token(), w.TTL().Milliseconds(),
		w.Ticket(), w.Lease().Milliseconds(), seq, channel, take}), i)...)
	if err != nil {
		return err
	}
	return readEnqueue(v, r)
}

// Watched implements Kind.
func (x *Exclusive) Watched() []string { return []string{x.key} }

// Places implements Kind.
func (x *Exclusive) Places() bool { return false }

// Attempt implements Kind.
func (x *Exclusive) Attempt() Kind { return x }

// Placed implements Kind.
func (x *Exclusive) Placed(string) Kind { return x }

// Token implements Kind.
func (x *Exclusive) Token() string { return NewToken() }

package lease

import (
	"context"
	"strconv"
	"time"

	"github.com/redlockgo/redlock/internal/node"
	"github.com/redlockgo/redlock/internal/random"
	"github.com/redlockgo/redlock/internal/scripts"
)

// Permit is a permit's kind (permit_*.lua): one of limit slots of a
// semaphore, each held like an exclusive lock. slot is the slot an attempt
// tries first, and once agreed the permit's slot.
type Permit struct {
	key   string
	limit int
	slot  string
}

// NewPermit returns the kind of a permit of key among limit.
func NewPermit(key string, limit int) Permit { return Permit{key: key, limit: limit} }

// Enter implements Kind.
func (p Permit) Enter(e *Env, token string, nodes []int) []node.Slot {
	return e.Nodes.TakeAll(p.key, token, true, nodes)
}

// Take implements Kind: PermitAcquire, from the attempt's slot (only that
// slot for a heal).
func (p Permit) Take(ctx context.Context, e *Env, i int, token string, ttl time.Duration, heal bool, w Watch, t *Take) (bool, error) {
	keys := []string{p.key, e.fence(i, p.key)}
	args := []any{token, ttl.Milliseconds(), p.limit, p.slot, flag(heal), e.delay()}
	keys, args = w.append(keys, args)
	v, err := e.Nodes.Pool(i).Eval(ctx, scripts.PermitAcquire, keys, e.withCeiling(args, i)...)
	if err != nil {
		return false, err
	}
	return readTake(v, true, t)
}

// Extend implements Kind: the holder's own slot.
func (p Permit) Extend(ctx context.Context, e *Env, i int, token string, ttl time.Duration) (int64, error) {
	v, err := e.Nodes.Pool(i).Eval(ctx, scripts.PermitExtend, []string{p.key}, e.withCeiling([]any{token, ttl.Milliseconds(), p.slot, e.delay()}, i)...)
	return Int(v), err
}

// Releaser implements Kind: every slot that holds the token is freed.
func (p Permit) Releaser(e *Env, token string, _ any, wake bool) Release {
	return releaseFunc(func(ctx context.Context, i int) (bool, error) {
		keys := []string{p.key}
		if wake {
			keys = append(keys, e.WatchKeys(i, keys)...)
		}
		v, err := e.Nodes.Pool(i).Eval(ctx, scripts.PermitRelease, keys, token, e.delay())
		return Int(v) == 1, err
	})
}

// RaiseFence implements Kind.
func (p Permit) RaiseFence(ctx context.Context, e *Env, i int, token, fence string) (bool, error) {
	keys := []string{p.key, e.fence(i, p.key)}
	v, err := e.Nodes.Pool(i).Eval(ctx, scripts.PermitFence, keys, token, p.slot, fence)
	return Int(v) == 1, err
}

// Watched implements Kind.
func (p Permit) Watched() []string { return []string{p.key} }

// Places implements Kind: nodes must agree on the slot.
func (p Permit) Places() bool { return true }

// Attempt starts each attempt at a random slot: concurrent acquirers then
// rarely want the same one, and nodes in the same state agree.
func (p Permit) Attempt() Kind {
	p.slot = strconv.Itoa(random.N(p.limit))
	return p
}

// Placed implements Kind.
func (p Permit) Placed(slot string) Kind {
	p.slot = slot
	return p
}

// Token implements Kind.
func (p Permit) Token() string { return NewToken() }

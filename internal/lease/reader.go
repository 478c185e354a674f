package lease

import (
	"context"
	"time"

	"github.com/redlockgo/redlock/internal/node"
	"github.com/redlockgo/redlock/internal/scripts"
)

// Reader is a reader's kind (rlock_*.lua): each reader a lease of its own
// on the key, excluding writers.
type Reader struct{ key string }

// NewReader returns the kind of a reader of key.
func NewReader(key string) Reader { return Reader{key: key} }

// Enter implements Kind.
func (r Reader) Enter(e *Env, token string, nodes []int) []node.Slot {
	return e.Nodes.TakeAll(r.key, token, true, nodes)
}

// Take implements Kind: RLockAcquire, which refuses while a writer holds
// the key or waits for it (unless heal).
func (r Reader) Take(ctx context.Context, e *Env, i int, token string, ttl time.Duration, heal bool, w Watch, t *Take) (bool, error) {
	n := e.Nodes.Names(i)
	keys := []string{r.key, n.Readers(r.key), n.Queue(r.key)[2], n.Fence(r.key), n.Held(r.key)}
	args := []any{token, ttl.Milliseconds(), flag(heal), e.delay()}
	keys, args = w.append(keys, args)
	v, err := e.Nodes.Pool(i).Eval(ctx, scripts.RLockAcquire, keys, e.withCeiling(args, i)...)
	if err != nil {
		return false, err
	}
	return readTake(v, false, t)
}

// flag is a script's boolean argument.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// append adds the watch set of the call's one key, and the channel and
// lease, to a take's KEYS and ARGV when w registers.
func (w Watch) append(keys []string, args []any) ([]string, []any) {
	if w.Keys == nil {
		return keys, args
	}
	return append(keys, w.Keys[0]), append(args, w.Channel, w.Lease)
}

// Extend implements Kind: the reader's own lease.
func (r Reader) Extend(ctx context.Context, e *Env, i int, token string, ttl time.Duration) (int64, error) {
	n := e.Nodes.Names(i)
	keys := []string{r.key, n.Readers(r.key), n.Held(r.key)}
	v, err := e.Nodes.Pool(i).Eval(ctx, scripts.RLockExtend, keys, e.withCeiling([]any{token, ttl.Milliseconds(), e.delay()}, i)...)
	return Int(v), err
}

// Releaser implements Kind: the last reader to leave hands the key to the
// first waiting writer.
func (r Reader) Releaser(e *Env, token string, _ any, wake bool) Release {
	return releaseFunc(func(ctx context.Context, i int) (bool, error) {
		n := e.Nodes.Names(i)
		q := n.Queue(r.key)
		keys := []string{r.key, n.Readers(r.key), q[1], q[2], q[3], n.Held(r.key)}
		if wake {
			keys = append(keys, n.Watch(r.key))
		}
		v, err := e.Nodes.Pool(i).Eval(ctx, scripts.RLockRelease, keys, e.withCeiling([]any{token, e.delay()}, i)...)
		code, err := e.readRelease(i, v, err)
		return code == 1, err
	})
}

// RaiseFence implements Kind.
func (r Reader) RaiseFence(ctx context.Context, e *Env, i int, token, fence string) (bool, error) {
	n := e.Nodes.Names(i)
	keys := []string{r.key, n.Readers(r.key), n.Fence(r.key)}
	v, err := e.Nodes.Pool(i).Eval(ctx, scripts.RLockFence, keys, token, fence)
	return Int(v) == 1, err
}

// Watched implements Kind.
func (r Reader) Watched() []string { return []string{r.key} }

// Places implements Kind.
func (r Reader) Places() bool { return false }

// Attempt implements Kind.
func (r Reader) Attempt() Kind { return r }

// Placed implements Kind.
func (r Reader) Placed(string) Kind { return r }

// Token implements Kind.
func (r Reader) Token() string { return NewToken() }

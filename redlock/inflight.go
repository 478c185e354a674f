package redlock

import (
	"context"
	"sync"
	"sync/atomic"
)

// releases tracks, per key, the Unlock whose node calls are still in
// flight. Unlock returns at the majority, so its deletes to the slowest
// nodes may still be on their way when the same Client locks the key again
// (its next waiter is woken at once). Were the new SET to overtake such a
// delete, that node would answer "taken" and the new attempt would need
// every one of the remaining nodes. An acquisition therefore sends its SET
// to a node only once this Client's previous delete of that key on that
// node has answered or timed out: the order on each node is the order in
// which the calls were made, and the majority still decides as soon as it
// can.
type releases struct {
	mu   sync.Mutex
	keys map[string]*inflight
}

// inflight is one Unlock's node calls: done[i] is closed once node i has
// answered (or timed out).
type inflight struct {
	done []chan struct{}
	left atomic.Int32
}

// start registers an Unlock of key over n nodes. The caller must call
// finish(key, f, i) once for every node.
func (r *releases) start(key string, n int) *inflight {
	f := &inflight{done: make([]chan struct{}, n)}
	for i := range f.done {
		f.done[i] = make(chan struct{})
	}
	f.left.Store(int32(n))
	r.mu.Lock()
	if r.keys == nil {
		r.keys = make(map[string]*inflight)
	}
	r.keys[key] = f // a later Unlock of the key supersedes an earlier one
	r.mu.Unlock()
	return f
}

// finish records that node i has answered; the last node unregisters f.
func (r *releases) finish(key string, f *inflight, i int) {
	close(f.done[i])
	if f.left.Add(-1) != 0 {
		return
	}
	r.mu.Lock()
	if r.keys[key] == f {
		delete(r.keys, key)
	}
	r.mu.Unlock()
}

// pending returns the Unlock of key still in flight, or nil.
func (r *releases) pending(key string) *inflight {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.keys[key]
}

// wait returns once node i has answered f's delete, or ctx ends. A nil f
// returns at once.
func (f *inflight) wait(ctx context.Context, i int) error {
	if f == nil {
		return nil
	}
	select {
	case <-f.done[i]:
		return nil
	default:
	}
	select {
	case <-f.done[i]:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

package redlock

import (
	"context"
	"sync"
)

// order keeps a Client's own calls on one key in the order they were made,
// node by node. A call on (key, node) is sent only once this Client's
// previous call on the same key and node has answered or timed out.
//
// Calls return at the majority, so the slowest node may still be working on
// the previous call when the next one starts: an Unlock's delete when the
// next waiter's attempt arrives, an attempt's SET when the next Lock of the
// key by the same Client arrives, a waiter's queue round when its Unlock
// arrives. Were the later call to overtake the earlier one, the node would
// answer "taken" to an attempt that should have won, or put a waiter that
// already left back in its queue. Ordering them costs nothing on a healthy
// node (the previous call has long answered) and at most one node timeout
// on a slow one, which the majority does not wait for.
//
// The lock is held only to read and swap the tail of a chain, never across
// I/O.
type order struct {
	mu   sync.Mutex
	keys map[string]*chain
}

// chain is one key's calls in flight: tail[i] is closed once the latest call
// on node i has finished. refs counts the calls not yet finished.
type chain struct {
	tail []chan struct{}
	refs int
}

// turn is one call's place in a chain.
type turn struct {
	o    *order
	key  string
	prev chan struct{} // nil when no earlier call is in flight
	mine chan struct{}
}

// enter takes the next place on (key, node i) among n nodes. The caller must
// call done on the returned turn once the node has answered or timed out.
func (o *order) enter(key string, i, n int) turn {
	mine := make(chan struct{})
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.keys == nil {
		o.keys = make(map[string]*chain)
	}
	ch := o.keys[key]
	if ch == nil {
		ch = &chain{tail: make([]chan struct{}, n)}
		o.keys[key] = ch
	}
	prev := ch.tail[i]
	ch.tail[i] = mine
	ch.refs++
	return turn{o: o, key: key, prev: prev, mine: mine}
}

// wait returns once the previous call on the same key and node has
// finished, or ctx has ended.
func (t turn) wait(ctx context.Context) error {
	if t.prev == nil {
		return nil
	}
	select {
	case <-t.prev:
		return nil
	default:
	}
	select {
	case <-t.prev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// done ends the call: the next call on the key and node may go.
func (t turn) done() {
	close(t.mine)
	t.o.mu.Lock()
	defer t.o.mu.Unlock()
	ch := t.o.keys[t.key]
	if ch.refs--; ch.refs == 0 {
		delete(t.o.keys, t.key)
	}
}

// call runs op on node i of n for key, in this Client's order of calls on
// (key, i). It is the only way node calls on a lock key are made.
func (o *order) call(ctx context.Context, key string, i, n int, op func(context.Context) (bool, error)) (bool, error) {
	t := o.enter(key, i, n)
	defer t.done()
	if err := t.wait(ctx); err != nil {
		return false, err
	}
	return op(ctx)
}

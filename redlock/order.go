package redlock

import (
	"context"
	"sync"
)

// order keeps a Client's own calls on one key in the order they were made,
// node by node, where the order matters:
//
//   - a write (SET NX, and a release) is sent to a node only once this
//     Client's previous write of the same key on that node has answered or
//     timed out: a re-lock's SET never overtakes the delete before it, nor
//     a later Lock's SET the late SET of the one before;
//   - every call with a token (a lock's or a waiter's) is sent only once the
//     previous call with the same token has answered or timed out on that
//     node: an Unlock never overtakes its lock's SET or its waiter's queue
//     round, and a waiter's give-back never overtakes its round, which
//     would put it back in a queue it left.
//
// Calls return at the majority, so the slowest node may still be working
// on the previous call when the next one starts. Ordering costs nothing on a
// healthy node (the previous call has long answered) and at most one node
// timeout on a slow one, which the majority does not wait for. Different
// waiters' rounds are not ordered among themselves, so a busy key's waiters
// never queue behind each other inside the Client.
//
// The lock is held only to read and swap the tail of a chain, never across
// I/O.
type order struct {
	mu     sync.Mutex
	chains map[string]*chain // by "k"+key for writes, "t"+token for tokens
}

// chain is one key's writes, or one token's calls, in flight: tail[i] is
// closed once the latest one on node i has finished. refs counts the calls
// not yet finished.
type chain struct {
	tail []chan struct{}
	refs int
}

// turn is one call's place in a chain.
type turn struct {
	o    *order
	id   string
	prev chan struct{} // nil when no earlier call is in flight
	mine chan struct{}
}

// enter takes the next place on (id, node i) among n nodes in each chain
// named (key "" for none), at once: two calls never take places in two
// chains in opposite orders. The caller must call done on each turn taken
// once the node has answered or timed out.
func (o *order) enter(i, n int, token, key string) (t, k turn) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t = o.enterLocked("t"+token, i, n)
	if key != "" {
		k = o.enterLocked("k"+key, i, n)
	}
	return t, k
}

func (o *order) enterLocked(id string, i, n int) turn {
	mine := make(chan struct{})
	if o.chains == nil {
		o.chains = make(map[string]*chain)
	}
	ch := o.chains[id]
	if ch == nil {
		ch = &chain{tail: make([]chan struct{}, n)}
		o.chains[id] = ch
	}
	prev := ch.tail[i]
	ch.tail[i] = mine
	ch.refs++
	return turn{o: o, id: id, prev: prev, mine: mine}
}

// wait returns once the previous call in the chain has finished on the
// node, or ctx has ended.
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

// done ends the call: the next call in the chain may go.
func (t turn) done() {
	close(t.mine)
	t.o.mu.Lock()
	defer t.o.mu.Unlock()
	ch := t.o.chains[t.id]
	if ch.refs--; ch.refs == 0 {
		delete(t.o.chains, t.id)
	}
}

// slot is one call's places in the chains of order, taken by the goroutine
// that makes the call, before it starts the goroutine that sends it: the
// order of calls is the order in which they were made, whatever the order
// in which their goroutines run.
type slot struct {
	t, k  turn
	write bool
}

// take takes the places of a call on node i of n for key and token: in
// token's chain, and for a write in key's chain too. The caller must run
// the slot, exactly once.
func (o *order) take(key, token string, write bool, i, n int) slot {
	var keyChain string
	if write {
		keyChain = key
	}
	t, k := o.enter(i, n, token, keyChain)
	return slot{t: t, k: k, write: write}
}

// takeAll takes the places of one call per node of nodes (nil: all n
// nodes), indexed by node.
func (o *order) takeAll(key, token string, write bool, nodes []int, n int) []slot {
	slots := make([]slot, n)
	if nodes == nil {
		for i := range n {
			slots[i] = o.take(key, token, write, i, n)
		}
		return slots
	}
	for _, i := range nodes {
		slots[i] = o.take(key, token, write, i, n)
	}
	return slots
}

// run sends the call: it waits for the calls before it in its chains (or
// for ctx to end), runs op, and frees its places.
func (s slot) run(ctx context.Context, op func(context.Context) (bool, error)) (bool, error) {
	defer s.t.done()
	if s.write {
		defer s.k.done()
		if err := s.k.wait(ctx); err != nil {
			return false, err
		}
	}
	if err := s.t.wait(ctx); err != nil {
		return false, err
	}
	return op(ctx)
}

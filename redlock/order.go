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

// enter takes the next places on (id, node i) among n nodes, for each id,
// at once: two calls never take places in two chains in opposite orders.
// The caller must call done on each turn once the node has answered or
// timed out.
func (o *order) enter(i, n int, ids ...string) []turn {
	o.mu.Lock()
	defer o.mu.Unlock()
	turns := make([]turn, len(ids))
	for j, id := range ids {
		turns[j] = o.enterLocked(id, i, n)
	}
	return turns
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

// call runs op on node i of n for key and token, in this Client's order of
// calls with token, and, for a write, of writes of key (see order). Every
// node call on a lock key goes through it.
func (o *order) call(ctx context.Context, key, token string, write bool, i, n int, op func(context.Context) (bool, error)) (bool, error) {
	ids := []string{"t" + token}
	if write {
		ids = append(ids, "k"+key)
	}
	turns := o.enter(i, n, ids...)
	defer func() {
		for _, t := range turns {
			t.done()
		}
	}()
	for _, t := range turns {
		if err := t.wait(ctx); err != nil {
			return false, err
		}
	}
	return op(ctx)
}

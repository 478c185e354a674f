package node

import (
	"context"
	"sync"
)

// Order keeps a Client's own calls on one key in the order they were made,
// node by node, where the order matters:
//
//   - a write (SET NX, and a release) is sent to a node only once this
//     Client's previous write of the same key there has answered or timed
//     out: a re-lock's SET never overtakes the delete before it;
//   - a call with a token (a lock's or a waiter's) is sent only once the
//     previous call with the same token has answered or timed out there:
//     an Unlock never overtakes its lock's SET or its waiter's round.
//
// The order is transitive: a call whose wait ended with its context (it
// was never sent) does not let the calls after it overtake the ones it
// waited for. Calls return at the majority, so a slow node may still run
// the previous call when the next starts; ordering costs at most one node
// timeout on such a node. Different waiters' rounds are not ordered among
// themselves. The mutex guards only the tail of a chain, never I/O.
type Order struct {
	mu     sync.Mutex
	chains map[chainID]*chain
}

// chainID names a chain: a key's writes, or a token's calls.
type chainID struct {
	write bool
	name  string
}

// chain is one key's writes, or one token's calls, in flight: tail[i] is
// the latest one on node i. refs counts the calls not yet finished.
type chain struct {
	tail []*pending
	refs int
}

// pending is one call on one node, until it finishes. Its channel is made
// only when a later call has to wait for it: on a healthy node the call
// has long finished by then, and nothing is allocated. Guarded by order.mu.
//
// A call whose wait ended with its context finishes without having run,
// while the call before it may still be working: before keeps that call,
// so that a later call waits for it too. Without it the order would not be
// transitive: a waiter's round cut while queued behind its give-back would
// let the next round overtake the give-back, whose delete then removed the
// key that round took with the same token (two holders at once).
type pending struct {
	finished bool
	ch       chan struct{} // closed when finished, if a later call waits
	before   *pending      // the call before it that had not finished when it entered
}

// turn is one call's place in a chain.
type turn struct {
	o    *Order
	id   chainID
	prev *pending // nil when no earlier call is in flight
	mine *pending
}

// enter takes the next place on node i among n nodes in token's chain and,
// when key is not "", in key's chain, at once: two calls never take places
// in two chains in opposite orders. mine holds the call's two places. The
// caller must call done on each turn taken once the node has answered or
// timed out.
func (o *Order) enter(i, n int, token, key string, mine *[2]pending) (t, k turn) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t = o.enterLocked(chainID{name: token}, i, n, &mine[0])
	if key != "" {
		k = o.enterLocked(chainID{write: true, name: key}, i, n, &mine[1])
	}
	return t, k
}

func (o *Order) enterLocked(id chainID, i, n int, mine *pending) turn {
	if o.chains == nil {
		o.chains = make(map[chainID]*chain)
	}
	ch := o.chains[id]
	if ch == nil {
		ch = &chain{tail: make([]*pending, n)}
		o.chains[id] = ch
	}
	prev := unfinished(ch.tail[i])
	mine.before = prev
	ch.tail[i] = mine
	ch.refs++
	return turn{o: o, id: id, prev: prev, mine: mine}
}

// unfinished returns the latest call from p back that has not finished,
// or nil. Guarded by order.mu.
func unfinished(p *pending) *pending {
	for p != nil && p.finished {
		p = p.before
	}
	return p
}

// wait returns once every earlier call in the chain has finished on the
// node (the previous one, and those it stopped waiting for), or ctx has
// ended.
func (t turn) wait(ctx context.Context) error {
	for p := t.prev; ; {
		t.o.mu.Lock()
		if p = unfinished(p); p == nil {
			t.o.mu.Unlock()
			return nil
		}
		if p.ch == nil {
			p.ch = make(chan struct{})
		}
		ch := p.ch
		t.o.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// done ends the call: the next call in the chain may go.
func (t turn) done() {
	t.o.mu.Lock()
	defer t.o.mu.Unlock()
	t.mine.finished = true
	if t.mine.ch != nil {
		close(t.mine.ch)
	}
	ch := t.o.chains[t.id]
	if ch.refs--; ch.refs == 0 {
		delete(t.o.chains, t.id)
	}
}

// Slot is one call's places in the chains of an Order, taken by the goroutine
// that makes the call, before it starts the goroutine that sends it: the
// order of calls is the order in which they were made, whatever the order
// in which their goroutines run.
type Slot struct {
	t, k  turn
	more  []turn // a multi-lock's further keys (TakeKeys), after k
	write bool
}

// Take takes the places of a call on node i of n for key and token: in
// token's chain, and for a write in key's chain too. The caller must Run
// the slot, exactly once.
func (o *Order) Take(key, token string, write bool, i, n int) Slot {
	return o.takeInto(key, token, write, i, n, new([2]pending))
}

func (o *Order) takeInto(key, token string, write bool, i, n int, mine *[2]pending) Slot {
	var keyChain string
	if write {
		keyChain = key
	}
	t, k := o.enter(i, n, token, keyChain, mine)
	return Slot{t: t, k: k, write: write}
}

// TakeAll takes the places of one call per node of nodes (nil: all n
// nodes), indexed by node. The caller must Run each of them, exactly once.
func (o *Order) TakeAll(key, token string, write bool, nodes []int, n int) []Slot {
	slots := make([]Slot, n)
	places := make([][2]pending, n)
	if nodes == nil {
		for i := range n {
			slots[i] = o.takeInto(key, token, write, i, n, &places[i])
		}
		return slots
	}
	for _, i := range nodes {
		slots[i] = o.takeInto(key, token, write, i, n, &places[i])
	}
	return slots
}

// Run sends the call: it waits for the calls before it in its chains (or
// for ctx to end), runs op, and frees its places.
func (s Slot) Run(ctx context.Context, op func(context.Context) (bool, error)) (bool, error) {
	defer s.t.done()
	if s.write {
		defer s.k.done()
		for _, k := range s.more {
			defer k.done()
		}
		if err := s.k.wait(ctx); err != nil {
			return false, err
		}
		for _, k := range s.more {
			if err := k.wait(ctx); err != nil {
				return false, err
			}
		}
	}
	if err := s.t.wait(ctx); err != nil {
		return false, err
	}
	return op(ctx)
}

// TakeKeys takes the places of one write per node of nodes (nil: all n)
// for keys and token: in token's chain and in every key's. Each call enters
// every chain at once, under one lock, so two calls are in the same order in
// every chain they share and never wait for each other in a cycle. The
// caller must Run each slot, exactly once.
func (o *Order) TakeKeys(keys []string, token string, nodes []int, n int) []Slot {
	if nodes == nil {
		nodes = make([]int, n)
		for i := range nodes {
			nodes[i] = i
		}
	}
	slots := make([]Slot, n)
	places := make([]pending, len(nodes)*(1+len(keys)))
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, i := range nodes {
		s := Slot{t: o.enterLocked(chainID{name: token}, i, n, &places[0]), write: true}
		s.k = o.enterLocked(chainID{write: true, name: keys[0]}, i, n, &places[1])
		if len(keys) > 1 {
			s.more = make([]turn, len(keys)-1)
			for j, k := range keys[1:] {
				s.more[j] = o.enterLocked(chainID{write: true, name: k}, i, n, &places[2+j])
			}
		}
		places = places[1+len(keys):]
		slots[i] = s
	}
	return slots
}

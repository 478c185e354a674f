package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redlockgo/redlock/internal/fanout"
	"github.com/redlockgo/redlock/internal/scripts"
)

// acquireAll is one attempt of a multi-lock: AcquireAll on every node in
// parallel, decided as acquire decides (majority, validity, fence), and on
// failure undone on every node where it may have landed. keys are sorted and
// checked; ttl is in whole milliseconds. w registers the Client as a
// watcher of a key found held (nil: none).
func (c *Client) acquireAll(ctx context.Context, keys []string, ttl time.Duration, lc lockConfig, w *watching) (*Lock, error) {
	l := c.newLock(keys[0], newToken(), ttl, lc.heal)
	l.keys = keys
	timeout := c.nodeTimeout(ttl)
	decided := make(chan struct{}) // closed once failed is final
	failed := false
	held := make([]int, len(c.pools)) // per node: 1+index of a key found held
	var counters []uint64
	if lc.fencing {
		counters = make([]uint64, len(c.pools))
	}
	start := c.cfg.clock.Now()

	slots := c.order.takeKeys(keys, l.token, nil, len(c.pools))
	res := c.decide(ctx, timeout, contendedGrace(timeout),
		func(ctx context.Context, i int) (bool, error) {
			return slots[i].run(ctx, func(ctx context.Context) (bool, error) {
				return l.setAllOn(ctx, i, lc.fencing, counters, &held[i], w.on(c, i, keys...))
			})
		},
		func(v fanout.Vote, _ bool) {
			// A straggler whose keys may have landed after the decision:
			// undo them if the attempt failed; Unlock covers them if not.
			<-decided
			if mayHold(v) && failed {
				c.releaseAllAsync(keys, l.token, []int{v.Node}, timeout)
			}
		}, nil)

	ok, fenceErr := c.holds(ctx, l, res.Reached, res, counters, lc, start, timeout)
	failed = !ok
	close(decided)
	if ok {
		return l, nil
	}

	c.releaseAllAsync(keys, l.token, mayHoldNodes(res), timeout)
	if fenceErr != nil {
		return nil, fenceErr
	}
	qe := c.notObtained(res, res.Reached, start)
	taken := make(map[int]string) // read only from the votes in: stragglers still write held
	for _, v := range res.Votes {
		if k := held[v.Node]; !v.OK && v.Err == nil && k > 0 && k <= len(keys) {
			taken[v.Node] = keys[k-1]
		}
	}
	for _, n := range qe.Nodes {
		if k, ok := taken[n.Node]; ok {
			n.Err = fmt.Errorf("%w: key %q", ErrTaken, k)
		}
	}
	return nil, qe
}

// setAllOn runs AcquireAll for l on node i; with fencing it stores the
// largest of the keys' counters in counters[i]. It records in *held which
// key (1-based) the node found held, which w then watches.
func (l *Lock) setAllOn(ctx context.Context, i int, fencing bool, counters []uint64, held *int, w nodeWatch) (bool, error) {
	ks := l.keys
	args := []any{l.token, l.ttl.Milliseconds(), len(l.keys)}
	if fencing || w.keys != nil {
		ks = make([]string, 0, 3*len(l.keys))
		ks = append(ks, l.keys...)
	}
	if fencing {
		n := l.c.names(i)
		for _, k := range l.keys {
			ks = append(ks, n.fence(k))
		}
	}
	if w.keys != nil {
		ks = append(ks, w.keys...)
		args = append(args, w.channel, w.lease)
	}
	r, err := l.c.pools[i].Eval(ctx, scripts.AcquireAll, ks, args...)
	if err != nil {
		return false, err
	}
	arr, _ := r.([]any)
	if len(arr) == 0 {
		return false, errMalformed
	}
	if asInt(arr[0]) != scripts.AcquireAllSet {
		if len(arr) > 1 {
			*held = int(asInt(arr[1]))
		}
		return false, nil
	}
	if !fencing {
		return true, nil
	}
	if len(arr) != 1+len(l.keys) {
		return false, errors.New("redlock: malformed fence reply")
	}
	var top uint64
	for j, v := range arr[1:] {
		s, _ := v.(string)
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			// The keys are ours but a counter is unusable: report the node
			// as failed, so the attempt's cleanup releases it.
			return false, fmt.Errorf("redlock: fence counter %s is not a number: %q", l.c.fenceKey(i, l.keys[j]), s)
		}
		top = max(top, n)
	}
	counters[i] = top
	return true, nil
}

// extendAllOn runs ExtendAll for the multi-lock l on node i.
func (l *Lock) extendAllOn(ctx context.Context, i int, ttl time.Duration) (int64, error) {
	r, err := l.c.pools[i].Eval(ctx, scripts.ExtendAll, l.keys, l.token, ttl.Milliseconds())
	return asInt(r), err
}

// healAllOn sets the multi-lock l's keys again on node i, only where none
// is held (AcquireAll).
func (l *Lock) healAllOn(ctx context.Context, i int, ttl time.Duration) (bool, error) {
	r, err := l.c.pools[i].Eval(ctx, scripts.AcquireAll, l.keys, l.token, ttl.Milliseconds(), len(l.keys))
	if err != nil {
		return false, err
	}
	arr, _ := r.([]any)
	return len(arr) > 0 && asInt(arr[0]) == scripts.AcquireAllSet, nil
}

// raiseFenceAllOn runs phase 2 of fencing for the multi-lock l on node i:
// FenceRaiseAll over every key's counter.
func (l *Lock) raiseFenceAllOn(ctx context.Context, i int, fence string) (bool, error) {
	ks := make([]string, 0, 2*len(l.keys))
	ks = append(ks, l.keys...)
	n := l.c.names(i)
	for _, k := range l.keys {
		ks = append(ks, n.fence(k))
	}
	r, err := l.c.pools[i].Eval(ctx, scripts.FenceRaiseAll, ks, l.token, fence, len(l.keys))
	return asInt(r) == 1, err
}

// releaseAll is Lock.release for a multi-lock: ReleaseAll on every node,
// decided at the majority. A node counts as released when it held every
// key with our token.
func (l *Lock) releaseAll(ctx context.Context) fanout.Result {
	c := l.c
	defer c.released.wake(l.keys)
	slots := c.order.takeKeys(l.keys, l.token, nil, len(c.pools))
	return c.confirm(context.WithoutCancel(ctx), c.nodeTimeout(l.ttl),
		func(ctx context.Context, i int) (bool, error) {
			return slots[i].run(ctx, func(ctx context.Context) (bool, error) {
				n, err := c.releaseAllOn(ctx, i, l.keys, l.token, true)
				return n == len(l.keys), err
			})
		})
}

// releaseAllAsync runs ReleaseAll for token on nodes in the background,
// each call bounded by timeout and ordered after this Client's earlier calls
// on the keys. Close waits for it.
func (c *Client) releaseAllAsync(keys []string, token string, nodes []int, timeout time.Duration) {
	if len(nodes) == 0 {
		return
	}
	slots := c.order.takeKeys(keys, token, nodes, len(c.pools))
	c.wg.Add(1) // callers run inside a registered operation
	go func() {
		defer c.wg.Done()
		fanout.Each(context.Background(), &c.wg, nodes, timeout, func(ctx context.Context, i int) (bool, error) {
			return slots[i].run(ctx, func(ctx context.Context) (bool, error) {
				n, err := c.releaseAllOn(ctx, i, keys, token, false)
				return n > 0, err
			})
		})
	}()
}

// releaseAllOn runs ReleaseAll on node i and returns how many keys it
// deleted; the waiters of this Client it handed keys to hear of it at once.
// With wake (an Unlock), the keys it leaves free wake their watchers.
func (c *Client) releaseAllOn(ctx context.Context, i int, keys []string, token string, wake bool) (int, error) {
	ks, args := c.queueKeysAll(i, keys), []any{token}
	if wake {
		ks = append(ks, c.watchKeys(i, keys)...)
		args = append(args, len(keys))
	}
	v, err := c.pools[i].Eval(ctx, scripts.ReleaseAll, ks, args...)
	if err != nil {
		return 0, err
	}
	arr, _ := v.([]any)
	if len(arr) == 0 {
		return 0, errMalformed
	}
	for j := 1; j+1 < len(arr); j += 2 {
		if next, ok := arr[j].(string); ok {
			c.grants.deliver(next, i, int(asInt(arr[j+1])))
		}
	}
	return int(asInt(arr[0])), nil
}

// multiSlot is a multi-lock call's places in the chains of order: its
// token's, and for every key the key's (each call of a multi-lock writes).
type multiSlot struct {
	t  turn
	ks []turn
}

// takeKeys takes the places of one write per node of nodes (nil: all n)
// for keys and token. Each call enters every chain at once, under one lock,
// so two calls are in the same order in every chain they share and never
// wait for each other in a cycle.
func (o *order) takeKeys(keys []string, token string, nodes []int, n int) []multiSlot {
	if nodes == nil {
		nodes = make([]int, n)
		for i := range nodes {
			nodes[i] = i
		}
	}
	slots := make([]multiSlot, n)
	places := make([]pending, len(nodes)*(1+len(keys)))
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, i := range nodes {
		s := multiSlot{t: o.enterLocked(chainID{name: token}, i, n, &places[0]), ks: make([]turn, len(keys))}
		for j, k := range keys {
			s.ks[j] = o.enterLocked(chainID{write: true, name: k}, i, n, &places[1+j])
		}
		places = places[1+len(keys):]
		slots[i] = s
	}
	return slots
}

// run sends the call once the calls before it in its chains have finished
// (or ctx has ended), and frees its places.
func (s multiSlot) run(ctx context.Context, op func(context.Context) (bool, error)) (bool, error) {
	defer s.t.done()
	for _, k := range s.ks {
		defer k.done()
	}
	for _, k := range s.ks {
		if err := k.wait(ctx); err != nil {
			return false, err
		}
	}
	if err := s.t.wait(ctx); err != nil {
		return false, err
	}
	return op(ctx)
}

// releases wakes a Client's LockAll, RLock and AcquirePermit calls when one
// of their keys is released: by a lock of the Client, or elsewhere, as the
// nodes tell the Client (watch.go). A wake-up only makes the call try again
// early; a lost one costs a retry delay.
type releases struct {
	mu      sync.Mutex
	watches map[string]map[chan struct{}]struct{}
}

// watch returns a channel that receives a value when one of keys is
// released, and the function that stops watching.
func (r *releases) watch(keys []string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watches == nil {
		r.watches = make(map[string]map[chan struct{}]struct{})
	}
	for _, k := range keys {
		if r.watches[k] == nil {
			r.watches[k] = make(map[chan struct{}]struct{})
		}
		r.watches[k][ch] = struct{}{}
	}
	return ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, k := range keys {
			delete(r.watches[k], ch)
			if len(r.watches[k]) == 0 {
				delete(r.watches, k)
			}
		}
	}
}

// wake signals the watchers of keys. It never blocks.
func (r *releases) wake(keys []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		for ch := range r.watches[k] {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

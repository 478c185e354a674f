package redlock

import (
	"context"
	"sync"

	"github.com/redlockgo/redlock/internal/scripts"
)

// releaseAllOn runs ReleaseAll on node i and returns how many keys it
// deleted; the waiters of this Client it handed keys to hear of it at once.
// With wake (an Unlock), the keys it leaves free wake their watchers.
func (c *Client) releaseAllOn(ctx context.Context, i int, keys []string, token string, wake bool) (int, error) {
	ks, args := c.queueKeysAll(i, keys), []any{token, len(keys), c.cfg.lockDelay.Milliseconds()}
	if wake {
		ks = append(ks, c.watchKeys(i, keys)...)
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

// takeKeys takes the places of one write per node of nodes (nil: all n)
// for keys and token: in token's chain and in every key's. Each call enters
// every chain at once, under one lock, so two calls are in the same order in
// every chain they share and never wait for each other in a cycle.
func (o *order) takeKeys(keys []string, token string, nodes []int, n int) []slot {
	if nodes == nil {
		nodes = make([]int, n)
		for i := range nodes {
			nodes[i] = i
		}
	}
	slots := make([]slot, n)
	places := make([]pending, len(nodes)*(1+len(keys)))
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, i := range nodes {
		s := slot{t: o.enterLocked(chainID{name: token}, i, n, &places[0]), write: true}
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

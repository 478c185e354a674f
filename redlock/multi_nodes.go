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
	v, err := c.nodes.Pool(i).Eval(ctx, scripts.ReleaseAll, ks, args...)
	if err != nil {
		return 0, err
	}
	arr, _ := v.([]any)
	if len(arr) == 0 {
		return 0, errMalformed
	}
	for j := 1; j+1 < len(arr); j += 2 {
		if next, ok := arr[j].(string); ok {
			c.waits.grants.deliver(next, i, int(asInt(arr[j+1])))
		}
	}
	return int(asInt(arr[0])), nil
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

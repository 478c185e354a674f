package wait

import "sync"

// Releases wakes a Client's blocked calls that retry (LockAll, RLock,
// AcquirePermit, an owner's Lock) when one of their keys is released: by a
// lock of the Client, or elsewhere, as the nodes tell the Client (Grants,
// watch.go). A wake-up only makes the call try again early; a lost one
// costs a retry delay. The zero value is ready to use.
type Releases struct {
	mu      sync.Mutex
	watches map[string]map[chan struct{}]struct{}
}

// Watch returns a channel that receives a value when one of keys is
// released, and the function that stops watching.
func (r *Releases) Watch(keys []string) (<-chan struct{}, func()) {
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

// Wake signals the watchers of keys. It never blocks.
func (r *Releases) Wake(keys []string) {
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

package wait

import (
	"sync"
	"time"
)

// Contended remembers the keys a Client's Lock calls recently found held.
// A Lock call on such a key joins the queue at once instead of trying SET NX
// first: under contention the try would be refused (a release hands the key
// straight to a waiter, so it is never free), and costs a round trip to
// every node before the caller even queues. An uncontended key keeps the
// plain path: one SET NX per node. The zero value is ready to use.
type Contended struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// ContendedFor is how long a key counts as contended after a Lock call
// found it held.
const ContendedFor = time.Second

// contendedKeys is how many keys Contended remembers before it forgets
// those whose time has passed.
const contendedKeys = 1024

// Mark records that a Lock call found key held at now.
func (c *Contended) Mark(key string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.until == nil {
		c.until = make(map[string]time.Time)
	}
	if len(c.until) >= contendedKeys {
		for k, t := range c.until {
			if !now.Before(t) {
				delete(c.until, k)
			}
		}
	}
	c.until[key] = now.Add(ContendedFor)
}

// Is reports whether key counts as contended at now.
func (c *Contended) Is(key string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.until[key]
	return ok && now.Before(t)
}

package chaos

import (
	"context"
	"sync"
)

// hush lets the holder of a round take its claims on the workers' keys
// without queueing behind a stream of new attempts. While it is on, the
// workers begin no new iteration; those under way finish (each bounded by
// lockWait), so the holder waits at most for them. It is off again as
// soon as the holder holds its claims (or gave up), before the nemesis
// injects anything: every fault of the round meets the workers at full
// speed, trying the keys the holder keeps.
//
// Without it the holder's claims on contended keys took up to 5s of a
// 9s TTL on a quiet 2-core machine (fair queues: every waiter ahead gets
// its turn first, a killed election leader's term runs out first), and
// the first majority-amnesia round was lost in most smoke runs, at
// dd8673a as well as later.
type hush struct {
	mu    sync.Mutex
	quiet chan struct{} // closed when the hush ends; nil when off
}

// begin turns the hush on; end must follow. On a nil hush begin and end
// do nothing.
func (h *hush) begin() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.quiet == nil {
		h.quiet = make(chan struct{})
	}
}

// end turns the hush off, letting waiting workers go on.
func (h *hush) end() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.quiet != nil {
		close(h.quiet)
		h.quiet = nil
	}
}

// wait returns once the hush is off, or ctx ended. A nil hush never waits.
func (h *hush) wait(ctx context.Context) {
	if h == nil {
		return
	}
	h.mu.Lock()
	q := h.quiet
	h.mu.Unlock()
	if q == nil {
		return
	}
	select {
	case <-q:
	case <-ctx.Done():
	}
}

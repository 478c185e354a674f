package fanout

import "sync"

// Runner starts a fan-out's node calls: Go runs f in a goroutine of its
// own, counted so that the Runner's owner can wait for it. A
// *sync.WaitGroup is one (its Go method); Workers is one that keeps its
// goroutines warm.
type Runner interface {
	Go(f func())
}

// maxIdle is how many goroutines Workers keeps waiting for a call.
const maxIdle = 64

// Workers is a Runner whose goroutines outlive one call: a node call runs
// through the client library's whole call chain, and a new goroutine grows
// its stack through it every time (runtime.newstack was a seventh of a
// lock's CPU). A worker that finished a call waits for the next, up to
// maxIdle of them; Close ends them. Every call is counted in Calls, which
// the owner waits on as before. The zero value is not usable: Calls is
// required.
type Workers struct {
	// Calls counts each call from Go until it returned.
	Calls *sync.WaitGroup

	mu     sync.Mutex
	idle   []chan func() // each waiting worker's inbox
	closed bool
	live   sync.WaitGroup // the workers themselves
}

// Go runs f on a waiting worker, or on a new one.
func (w *Workers) Go(f func()) {
	w.Calls.Add(1)
	w.mu.Lock()
	if n := len(w.idle); n > 0 {
		inbox := w.idle[n-1]
		w.idle = w.idle[:n-1]
		w.mu.Unlock()
		inbox <- f // buffered: never blocks
		return
	}
	if w.closed {
		w.mu.Unlock()
		go func() { // after Close: counted, not kept
			defer w.Calls.Done()
			f()
		}()
		return
	}
	w.live.Add(1)
	w.mu.Unlock()
	go w.run(f)
}

// run is one worker: it runs f, then each call handed to it, until it is
// not wanted any more (Close, or maxIdle others waiting).
func (w *Workers) run(f func()) {
	defer w.live.Done()
	var inbox chan func()
	for {
		f()
		w.Calls.Done()
		w.mu.Lock()
		if w.closed || len(w.idle) >= maxIdle {
			w.mu.Unlock()
			return
		}
		if inbox == nil {
			inbox = make(chan func(), 1)
		}
		w.idle = append(w.idle, inbox)
		w.mu.Unlock()
		if f = <-inbox; f == nil {
			return
		}
	}
}

// Close ends the waiting workers and waits for every worker to end; a
// worker still running a call ends after it. Calls made after Close run
// on goroutines of their own. It is safe to call twice.
func (w *Workers) Close() {
	w.mu.Lock()
	w.closed = true
	for _, inbox := range w.idle {
		inbox <- nil
	}
	w.idle = nil
	w.mu.Unlock()
	w.live.Wait()
}

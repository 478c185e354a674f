package fanout_test

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

	"github.com/redlockgo/redlock/internal/fanout"
)

// A worker that finished a call runs the next one; every call is counted
// in Calls until it returned; Close ends every worker (goleak, TestMain),
// and a call after Close still runs, counted.
func TestWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls sync.WaitGroup
		w := &fanout.Workers{Calls: &calls}
		var ran atomic.Int32
		var mu sync.Mutex
		workers := map[string]bool{} // the goroutines that ran a call
		record := func() {
			mu.Lock()
			defer mu.Unlock()
			workers[goroutineID()] = true
		}
		for range 3 {
			for range 5 {
				w.Go(func() { ran.Add(1); record() })
			}
			calls.Wait()
			synctest.Wait() // the workers are back waiting
		}
		assert.Equal(t, int32(15), ran.Load())

		// Five at a time, on the five workers waiting: no new goroutine.
		// (Goroutine IDs, not runtime.NumGoroutine: that counts the whole
		// process's, and one outside the bubble made it 9 for 8 in CI.)
		waiting := len(workers)
		gate := make(chan struct{})
		var running atomic.Int32
		for range 5 {
			w.Go(func() { running.Add(1); record(); <-gate })
		}
		synctest.Wait()
		assert.Equal(t, int32(5), running.Load(), "the calls run at once")
		assert.Equal(t, waiting, len(workers), "the waiting workers ran them")
		close(gate)
		calls.Wait()

		w.Close()
		w.Go(func() { ran.Add(1) })
		calls.Wait()
		assert.Equal(t, int32(16), ran.Load())
		w.Close() // twice is safe
	})
}

// goroutineID is the running goroutine's number, from its stack's header
// ("goroutine 42 [running]:").
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	return strings.Fields(string(buf))[1]
}

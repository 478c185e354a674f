package redlocktest_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/redlock"
	"github.com/redlockgo/redlock/redlocktest"
)

// How to test that a job stops when it loses its lock: Expire ends the hold
// under the running job, and the job must return once its context is done.
func Example_jobStopsWhenLockLost() {
	asTest(func(t testing.TB) { // in your test: func TestX(t *testing.T) { ... }
		nodes := redlocktest.New(t, 3)
		c := nodes.Client()

		// The job under test: it works until its context ends.
		started := make(chan struct{})
		job := func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			return context.Cause(ctx)
		}

		done := make(chan error, 1)
		go func() { done <- c.Do(context.Background(), "nightly-report", 2*time.Second, job) }()
		<-started
		nodes.Expire("nightly-report") // the hold runs out under the job

		select {
		case err := <-done: // at the next extension, at most ttl/3 later
			fmt.Println("the job stopped; lock lost:", errors.Is(err, redlock.ErrLockLost))
		case <-time.After(10 * time.Second):
			t.Fatalf("the job still runs after losing its lock")
		}
	})
	// Output:
	// the job stopped; lock lost: true
}

// How to test that two replicas never run a job at once: each replica is a
// Client of its own over the same nodes, and the job counts how many run.
func Example_twoReplicasNeverAtOnce() {
	asTest(func(t testing.TB) {
		nodes := redlocktest.New(t, 3)
		replicas := []*redlock.Client{nodes.Client(), nodes.Client()}

		var running, overlaps atomic.Int32
		job := func(ctx context.Context) error {
			if running.Add(1) > 1 {
				overlaps.Add(1)
			}
			defer running.Add(-1)
			time.Sleep(time.Millisecond) // the work; another replica would overlap here
			return nil
		}

		var wg sync.WaitGroup
		var runs atomic.Int32
		for _, c := range replicas {
			wg.Go(func() {
				for range 5 {
					// Do waits for the lock, so every run happens, one at a time.
					if err := c.Do(context.Background(), "nightly-report", 2*time.Second, job); err != nil {
						t.Errorf("run: %v", err)
						return
					}
					runs.Add(1)
				}
			})
		}
		wg.Wait()
		fmt.Println("runs:", runs.Load(), "overlapping:", overlaps.Load())

		// While one replica runs the job, the other is refused at once.
		_ = replicas[0].Do(context.Background(), "nightly-report", 2*time.Second, func(ctx context.Context) error {
			_, err := replicas[1].TryLock(ctx, "nightly-report", 2*time.Second)
			fmt.Println("the other replica is refused:", errors.Is(err, redlock.ErrNotObtained))
			return nil
		})
	})
	// Output:
	// runs: 10 overlapping: 0
	// the other replica is refused: true
}

// How to test "once per night": every replica tries the nightly job at the
// same time with TryDo, which runs it only where the lock was obtained; the
// others skip it (the error says the lock was held), and the job runs once.
func Example_oncePerNight() {
	asTest(func(t testing.TB) {
		nodes := redlocktest.New(t, 3)
		// Three replicas race for the same nodes at once; on a busy test
		// machine an in-memory answer can come after a 10s TTL's 500ms node
		// timeout, and a
		// replica refused for want of answers is not a replica that saw the
		// lock held. A 10s TTL has room for a longer node timeout.
		patient := redlock.WithNodeTimeout(2 * time.Second)
		replicas := []*redlock.Client{nodes.Client(patient), nodes.Client(patient), nodes.Client(patient)}
		var runs atomic.Int32
		release := make(chan struct{})
		results := make(chan error, len(replicas))
		for _, c := range replicas {
			go func() {
				results <- c.TryDo(context.Background(), "nightly-report", 10*time.Second, func(ctx context.Context) error {
					runs.Add(1)
					<-release // the night's work, while the others try
					return nil
				})
			}()
		}
		skipped := 0
		for i := range replicas {
			if i == len(replicas)-1 {
				close(release) // the others have given up: let the job end
			}
			switch err := <-results; {
			case err == nil:
			case redlock.IsContended(err):
				skipped++
			default:
				t.Errorf("TryDo: %v", err)
			}
		}
		fmt.Println("runs:", runs.Load(), "skipped:", skipped)
	})
	// Output:
	// runs: 1 skipped: 2
}

// How to test that work goes on with a node down, and stops with two down.
func ExampleNodes_Stop() {
	asTest(func(t testing.TB) {
		nodes := redlocktest.New(t, 3)
		c := nodes.Client()
		ctx := context.Background()

		nodes.Stop(0)
		l, err := c.TryLock(ctx, "invoice:42", 2*time.Second)
		fmt.Println("one node down, locked:", err == nil)
		_ = l.Unlock(ctx)

		nodes.Stop(1)
		_, err = c.TryLock(ctx, "invoice:42", 2*time.Second)
		fmt.Println("two nodes down, locked:", err == nil)

		nodes.Start(0)
		nodes.Start(1)
		l, err = c.TryLock(ctx, "invoice:42", 2*time.Second)
		fmt.Println("back, locked:", err == nil)
		_ = l.Unlock(ctx)
	})
	// Output:
	// one node down, locked: true
	// two nodes down, locked: false
	// back, locked: true
}

// asTest runs body as a test would, so that the examples run under go test:
// in your tests, write body's statements in a TestXxx function and use its
// t. A failure ends the example with log.Fatal.
func asTest(body func(t testing.TB)) {
	e := &exampleTB{}
	defer e.cleanup()
	body(e)
}

// exampleTB is the part of testing.TB the kit and the examples use.
type exampleTB struct {
	testing.TB // nil: only the methods below are called
	mu         sync.Mutex
	cleanups   []func()
}

func (e *exampleTB) Helper() {}

func (e *exampleTB) Cleanup(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cleanups = append(e.cleanups, f)
}

func (e *exampleTB) Errorf(format string, args ...any) { log.Fatalf(format, args...) }
func (e *exampleTB) Fatalf(format string, args ...any) { log.Fatalf(format, args...) }

func (e *exampleTB) cleanup() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
}

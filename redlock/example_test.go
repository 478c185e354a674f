package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// Do runs a function under the lock: the simple way.
func Example() {
	// Three in-memory Redis servers stand in for independent masters.
	var pools []pool.Pool
	for range 3 {
		srv, err := miniredis.Run()
		if err != nil {
			log.Fatal(err)
		}
		defer srv.Close()
		p, err := pool.FromURL("redis://" + srv.Addr())
		if err != nil {
			log.Fatal(err)
		}
		defer p.Close()
		pools = append(pools, p)
	}
	c, err := redlock.New(pools)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Shutdown(context.Background())

	err = c.Do(context.Background(), "invoice:42", 10*time.Second, func(ctx context.Context) error {
		fmt.Println("billing invoice 42 under the lock")
		return nil // on a lost lock ctx is canceled: stop, and return context.Cause(ctx)
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("done, lock released")
	// Output:
	// billing invoice 42 under the lock
	// done, lock released
}

func ExampleClient_Do() {
	c, stop := exampleClient() // on three in-memory Redis nodes, as in Example
	defer stop()
	ctx := context.Background()

	err := c.Do(ctx, "report", time.Minute, func(ctx context.Context) error {
		// While fn runs the lock is held, and kept alive.
		_, err := c.TryLock(ctx, "report", time.Minute)
		fmt.Println("a second caller is refused:", errors.Is(err, redlock.ErrNotObtained))
		return errors.New("report failed")
	})
	fmt.Println("Do returns fn's error:", err)

	l, err := c.TryLock(ctx, "report", time.Minute)
	fmt.Println("released after fn:", err == nil)
	_ = l.Unlock(ctx)
	// Output:
	// a second caller is refused: true
	// Do returns fn's error: report failed
	// released after fn: true
}

func ExampleClient_Lock() {
	pools, stop := examplePools() // three in-memory Redis nodes, as in Example
	defer stop()
	c, err := redlock.New(pools)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Shutdown(context.Background())
	ctx := context.Background()

	l, err := c.Lock(ctx, "invoice:42", 10*time.Second) // waits until obtained or ctx ends
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("locked", l.Key(), "on a majority of", len(pools), "nodes")
	fmt.Println("valid for at least 9s:", time.Until(l.Until()) > 9*time.Second)
	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("released")
	// Output:
	// locked invoice:42 on a majority of 3 nodes
	// valid for at least 9s: true
	// released
}

func ExampleClient_TryLock() {
	c, stop := exampleClient() // on three in-memory Redis nodes, as in Example
	defer stop()
	ctx := context.Background()

	first, err := c.TryLock(ctx, "report", time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	defer first.Unlock(ctx)

	_, err = c.TryLock(ctx, "report", time.Minute) // one attempt, no waiting
	fmt.Println(errors.Is(err, redlock.ErrNotObtained), errors.Is(err, redlock.ErrTaken))
	// Output: true true
}

func ExampleClient_Lock_timeout() {
	c, stop := exampleClient() // on three in-memory Redis nodes, as in Example
	defer stop()

	held, err := c.TryLock(context.Background(), "report", time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	defer held.Unlock(context.Background())

	// Wait at most 50ms for the lock.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.Lock(ctx, "report", time.Minute)
	fmt.Println(errors.Is(err, redlock.ErrNotObtained), errors.Is(err, context.DeadlineExceeded))
	// Output: true true
}

func ExampleLock_Extend() {
	c, stop := exampleClient() // on three in-memory Redis nodes, as in Example
	defer stop()
	ctx := context.Background()

	l, err := c.TryLock(ctx, "batch", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Unlock(ctx)
	before := l.Until()
	if err := l.Extend(ctx, time.Minute); err != nil {
		log.Fatal(err) // errors.Is(err, redlock.ErrNotHeld): stop working
	}
	fmt.Println("validity moved forward:", l.Until().After(before))
	// Output: validity moved forward: true
}

func ExampleClient_Status() {
	c, stop := exampleClient() // on three in-memory Redis nodes, as in Example
	defer stop()
	ctx := context.Background()

	l, err := c.TryLock(ctx, "batch", time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Unlock(ctx)
	st, err := c.Status(ctx, "batch")
	if err != nil {
		log.Fatal(err) // errors.Is(err, redlock.ErrNoMajority): too many nodes down
	}
	fmt.Println("held:", st.Held, "by our token:", st.Token == l.Token())
	fmt.Println("on at least", st.Needed, "of", st.Total, "nodes:", st.Holders >= st.Needed)
	fmt.Println("for most of a minute:", st.TTL > 50*time.Second)
	// Output:
	// held: true by our token: true
	// on at least 2 of 3 nodes: true
	// for most of a minute: true
}

func ExampleClient_Shutdown() {
	pools, stop := examplePools() // three in-memory Redis nodes, as in Example
	defer stop()
	replica, err := redlock.New(pools) // the process being stopped
	if err != nil {
		log.Fatal(err)
	}
	next, err := redlock.New(pools) // the replica that takes over
	if err != nil {
		log.Fatal(err)
	}
	defer next.Close()
	ctx := context.Background()

	if _, err := replica.TryLock(ctx, "leader", time.Minute); err != nil {
		log.Fatal(err)
	}
	// On SIGTERM, once the work has stopped: release rather than let the
	// lock run out its minute.
	if err := replica.Shutdown(ctx); err != nil {
		log.Print(err) // errors.Is(err, redlock.ErrNotReleased): left to expire
	}
	l, err := next.TryLock(ctx, "leader", time.Minute)
	fmt.Println("taken over at once:", err == nil)
	_ = l.Unlock(ctx)
	// Output: taken over at once: true
}

// examplePools starts three in-memory Redis servers and returns a Pool on
// each, as Example does, and a function that closes them all.
func examplePools() ([]pool.Pool, func()) {
	var pools []pool.Pool
	var closers []func()
	for range 3 {
		srv, err := miniredis.Run()
		if err != nil {
			log.Fatal(err)
		}
		closers = append(closers, srv.Close)
		p, err := pool.FromURL("redis://" + srv.Addr())
		if err != nil {
			log.Fatal(err)
		}
		closers = append(closers, func() { _ = p.Close() })
		pools = append(pools, p)
	}
	return pools, func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]() // in reverse, as the defers of Example run
		}
	}
}

// exampleClient returns a Client on examplePools, as Example makes it, and a
// function that shuts it down and closes the nodes.
func exampleClient() (*redlock.Client, func()) {
	pools, stop := examplePools()
	c, err := redlock.New(pools)
	if err != nil {
		log.Fatal(err)
	}
	return c, func() {
		_ = c.Shutdown(context.Background())
		stop()
	}
}

// LockAll takes several keys at once, or none: here a transfer between two
// accounts, whichever order each caller names them in.
func ExampleClient_LockAll() {
	c, stop := exampleClient()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	l, err := c.LockAll(ctx, []string{"account:bob", "account:alice"}, 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("holding", l.Keys())

	// A set that shares a key is refused as a whole, and takes nothing.
	_, err = c.TryLockAll(ctx, []string{"account:alice", "account:carol"}, 10*time.Second)
	fmt.Println("overlapping set refused:", errors.Is(err, redlock.ErrNotObtained))
	carol, err := c.TryLock(ctx, "account:carol", 10*time.Second)
	fmt.Println("carol's key left free:", err == nil)

	if err := carol.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// holding [account:alice account:bob]
	// overlapping set refused: true
	// carol's key left free: true
}

// Readers share a key; a writer excludes them, and they exclude it.
func ExampleClient_TryRLock() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	r1, err := c.TryRLock(ctx, "catalog", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	r2, err := c.TryRLock(ctx, "catalog", 10*time.Second) // readers share
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.TryLock(ctx, "catalog", 10*time.Second)
	fmt.Println("writer while reading:", errors.Is(err, redlock.ErrNotObtained))

	// Each reader is a lease of its own: extended and released alone.
	if err := r1.Extend(ctx, 20*time.Second); err != nil {
		log.Fatal(err)
	}
	_ = r1.Unlock(ctx)
	_ = r2.Unlock(ctx)
	w, err := c.TryLock(ctx, "catalog", 10*time.Second)
	fmt.Println("writer once the readers left:", err == nil)
	_, err = c.TryRLock(ctx, "catalog", 10*time.Second)
	fmt.Println("reader while writing:", errors.Is(err, redlock.ErrNotObtained))
	_ = w.Unlock(ctx)
	// Output:
	// writer while reading: true
	// writer once the readers left: true
	// reader while writing: true
}

// A counting semaphore: at most two holders at once.
func ExampleClient_AcquirePermit() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	const limit = 2
	a, err := c.AcquirePermit(ctx, "exports", limit, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	b, err := c.AcquirePermit(ctx, "exports", limit, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	// Both permits are taken: a third caller waits, here at most 100ms.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = c.AcquirePermit(short, "exports", limit, time.Minute)
	fmt.Println("third holder refused:", errors.Is(err, redlock.ErrNotObtained), errors.Is(err, context.DeadlineExceeded))

	_ = a.Unlock(ctx) // gives one permit back
	cPermit, err := c.AcquirePermit(ctx, "exports", limit, time.Minute)
	fmt.Println("third holder after a release:", err == nil)
	_ = b.Unlock(ctx)
	_ = cPermit.Unlock(ctx)
	// Output:
	// third holder refused: true true
	// third holder after a release: true
}

func ExampleClient_Resume() {
	c, stop := exampleClient() // on three in-memory Redis nodes, as in Example
	defer stop()
	ctx := context.Background()

	// One process takes the lock and hands its token on (a file, a queue,
	// or REDLOCK_TOKEN in the command of redlock run).
	first, err := c.TryLock(ctx, "migration", time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	token := first.Token()

	// Another carries on with the same hold: no new one is taken.
	l, err := c.Resume(ctx, "migration", token, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("resumed:", l.Token() == token)
	_, err = c.Resume(ctx, "migration", "NOT-THE-TOKEN", time.Minute)
	fmt.Println("another token:", errors.Is(err, redlock.ErrNotHeld))
	fmt.Println("released:", l.Unlock(ctx) == nil)
	// Output:
	// resumed: true
	// another token: true
	// released: true
}

// A job locks an account, and a step of the same job locks it again: with
// the job named as the owner the second Lock re-enters, and the account
// stays locked until both holds are given back.
func ExampleWithOwner() {
	c, stop := exampleClient() // on three in-memory Redis nodes, as in Example
	defer stop()
	ctx := context.Background()
	job := redlock.WithOwner("job-7")

	outer, err := c.Lock(ctx, "account:42", time.Minute, job)
	if err != nil {
		log.Fatal(err)
	}
	// Deeper in the same job (or in another process working for it):
	inner, err := c.Lock(ctx, "account:42", time.Minute, job)
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.TryLock(ctx, "account:42", time.Minute, redlock.WithOwner("job-8"))
	fmt.Println("another job refused:", errors.Is(err, redlock.ErrTaken))

	_ = inner.Unlock(ctx)
	st, _ := c.Status(ctx, "account:42")
	fmt.Println("after one Unlock, held by:", st.Token)
	_ = outer.Unlock(ctx)
	other, err := c.TryLock(ctx, "account:42", time.Minute, redlock.WithOwner("job-8"))
	fmt.Println("after both, another job:", err == nil)
	_ = other.Unlock(ctx)
	// Output:
	// another job refused: true
	// after one Unlock, held by: o:job-7
	// after both, another job: true
}

// TryDo runs a nightly job on one replica: every replica's cron fires at
// the same hour, and those that find the job running skip it at once.
// TryDo excludes overlap, not repetition: a replica whose cron fired after
// the job ended would run it again, so the job records that the night is
// done, or its key names the night and outlives it.
func ExampleClient_TryDo() {
	pools, stop := examplePools() // three in-memory Redis nodes, as in Example
	defer stop()
	var replicas []*redlock.Client // one Client per replica, as in three processes
	for range 3 {
		c, err := redlock.New(pools)
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		replicas = append(replicas, c)
	}
	nightly := func(name string, c *redlock.Client, report func()) {
		err := c.TryDo(context.Background(), "report:2026-12-01", time.Minute, func(ctx context.Context) error {
			report() // stop when ctx is done: the lock was lost
			return nil
		})
		switch {
		case err == nil:
			fmt.Println(name, "ran the report")
		case redlock.IsContended(err):
			fmt.Println(name, "skipped it: another replica runs it")
		default:
			fmt.Println(name, "could not tell:", err) // IsUnavailable: too few nodes
		}
	}

	// Replica a's report is running when b's and c's crons fire.
	running, finish, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		nightly("a", replicas[0], func() { close(running); <-finish })
	}()
	<-running
	nightly("b", replicas[1], func() {})
	nightly("c", replicas[2], func() {})
	close(finish)
	<-done
	// Output:
	// b skipped it: another replica runs it
	// c skipped it: another replica runs it
	// a ran the report
}

// DoAll runs a function under the locks of several keys, taken together
// and released together.
func ExampleClient_DoAll() {
	c, stop := exampleClient() // on three in-memory Redis nodes, as in Example
	defer stop()
	ctx := context.Background()

	err := c.DoAll(ctx, []string{"account:bob", "account:alice"}, 10*time.Second, func(ctx context.Context) error {
		_, err := c.TryLock(ctx, "account:alice", 10*time.Second)
		fmt.Println("alice's account is locked for the transfer:", errors.Is(err, redlock.ErrNotObtained))
		return nil // on a lost lock ctx is canceled: stop, and return context.Cause(ctx)
	})
	if err != nil {
		log.Fatal(err)
	}
	l, err := c.TryLock(ctx, "account:alice", 10*time.Second)
	fmt.Println("released after the transfer:", err == nil)
	_ = l.Unlock(ctx)
	// Output:
	// alice's account is locked for the transfer: true
	// released after the transfer: true
}

// IsContended tells a key held by another holder, worth trying again
// later, from nodes that failed (IsUnavailable), worth an alert.
func ExampleIsContended() {
	c, stop := exampleClient() // on three in-memory Redis nodes, as in Example
	defer stop()
	ctx := context.Background()

	held, err := c.TryLock(ctx, "report", time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	defer held.Unlock(ctx)

	_, err = c.TryLock(ctx, "report", time.Minute)
	switch {
	case redlock.IsContended(err):
		fmt.Println("held elsewhere: try again later")
	case redlock.IsUnavailable(err):
		fmt.Println("too few nodes: tell an operator")
	}
	// Output: held elsewhere: try again later
}

// IsUnavailable: here no node listens at all.
func ExampleIsUnavailable() {
	var pools []pool.Pool
	for range 3 {
		srv, err := miniredis.Run()
		if err != nil {
			log.Fatal(err)
		}
		addr := srv.Addr()
		srv.Close() // the node is down: its port refuses connections
		p, err := pool.FromURL("redis://" + addr)
		if err != nil {
			log.Fatal(err)
		}
		defer p.Close()
		pools = append(pools, p)
	}
	c, err := redlock.New(pools)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	_, err = c.TryLock(context.Background(), "report", time.Minute)
	fmt.Println("not obtained:", errors.Is(err, redlock.ErrNotObtained))
	fmt.Println("unavailable:", redlock.IsUnavailable(err), "contended:", redlock.IsContended(err))
	// Output:
	// not obtained: true
	// unavailable: true contended: false
}

// A fencing token lets the protected resource refuse a holder whose lock
// ran out while it was paused: each fenced acquisition's fence is greater
// than every earlier one's, and the resource keeps the highest it saw.
func ExampleWithFencing() {
	c, stop := exampleClient() // on three in-memory Redis nodes, as in Example
	defer stop()
	ctx := context.Background()

	var highest uint64 // the resource's side: the highest fence it accepted
	write := func(fence uint64, what string) {
		if fence < highest {
			fmt.Println(what, "refused: a later holder wrote first")
			return
		}
		highest = fence
		fmt.Println(what, "accepted")
	}

	a, err := c.TryLock(ctx, "ledger", time.Minute, redlock.WithFencing())
	if err != nil {
		log.Fatal(err)
	}
	_ = a.Unlock(ctx) // as if a paused past its validity and the lock expired
	b, err := c.TryLock(ctx, "ledger", time.Minute, redlock.WithFencing())
	if err != nil {
		log.Fatal(err)
	}
	defer b.Unlock(ctx)
	fmt.Println("b's fence is greater:", b.Fence() > a.Fence())
	write(b.Fence(), "b's write")
	write(a.Fence(), "a's late write") // a resumes, unaware
	// Output:
	// b's fence is greater: true
	// b's write accepted
	// a's late write refused: a later holder wrote first
}

// WithAutoExtend keeps a lock alive in the background until Unlock; Done
// tells when it ends, and Err why.
func ExampleWithAutoExtend() {
	pools, stop := examplePools() // three in-memory Redis nodes, as in Example
	defer stop()
	extended := make(chan struct{}, 1)
	c, err := redlock.New(pools, redlock.WithObserver(redlock.ObserverFunc(func(_ context.Context, e redlock.Event) {
		if e.Kind == redlock.Extended {
			select {
			case extended <- struct{}{}:
			default:
			}
		}
	})))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	// Extended every 100ms here (every ttl/3 with 0, the usual choice).
	l, err := c.TryLock(ctx, "feed", 10*time.Second, redlock.WithAutoExtend(100*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	first := l.Until()
	select {
	case <-extended:
	case <-l.Done(): // lost: stop using the resource
		log.Fatal(l.Err())
	}
	fmt.Println("extended in the background:", l.Until().After(first))
	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	<-l.Done()
	fmt.Println("ended by Unlock, not lost:", errors.Is(l.Err(), redlock.ErrNotHeld), errors.Is(l.Err(), redlock.ErrLockLost))
	// Output:
	// extended in the background: true
	// ended by Unlock, not lost: true false
}

// WithMaxHold caps how long a kept lock lasts: a job that runs past the cap
// loses its lock, and Do's context says why.
func ExampleWithMaxHold() {
	pools, stop := examplePools() // three in-memory Redis nodes, as in Example
	defer stop()
	c, err := redlock.New(pools, redlock.WithNodeTimeout(200*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// A TTL of 2s gives the keeper's one extension (the last: it asks
	// for what is left to the cap) 900ms to get through before the loss
	// margin; a failed extension would be the cause instead of the cap.
	err = c.Do(context.Background(), "reindex", 2*time.Second, func(ctx context.Context) error {
		<-ctx.Done() // a job that would run for ever
		return context.Cause(ctx)
	}, redlock.WithMaxHold(2*time.Second))
	fmt.Println("lost:", errors.Is(err, redlock.ErrLockLost), "at the cap:", errors.Is(err, redlock.ErrMaxHold))
	// Output: lost: true at the cap: true
}

// WithLogger logs each outcome; contention is ordinary and logged at
// Debug, failing nodes at Warn, a lost lock at Error.
func ExampleWithLogger() {
	pools, stop := examplePools() // three in-memory Redis nodes, as in Example
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey, "duration", "held", "error": // vary from run to run
				return slog.Attr{}
			}
			return a
		},
	}))
	// In-memory nodes cannot tell their age, which a Warn would report for
	// each (node_unverified): the restart quarantine is off here.
	c, err := redlock.New(pools, redlock.WithLogger(logger), redlock.WithQuarantine(0))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	l, err := c.TryLock(ctx, "report", time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	_, _ = c.TryLock(ctx, "report", time.Minute) // held: not obtained
	_ = l.Unlock(ctx)
	// Output:
	// level=DEBUG msg="redlock: acquired" key=report attempts=1
	// level=DEBUG msg="redlock: not_obtained" key=report attempts=1
	// level=DEBUG msg="redlock: released" key=report
}

package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redlockgo/redlock/redlock"
)

// Campaign blocks until the caller leads; the next campaigner takes over
// at once on Resign, with a higher term to fence the resource with.
func ExampleClient_Campaign() {
	c, stop := exampleClient() // on three in-memory Redis nodes, as in Example
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	_, err := c.Leader(ctx, "scheduler")
	fmt.Println("no leader yet:", errors.Is(err, redlock.ErrNoLeader))

	a, err := c.Campaign(ctx, "scheduler", "host-a:8080", 10*time.Second)
	if err != nil {
		log.Fatal(err) // wraps ErrNotObtained, and ctx.Err() if ctx ended the wait
	}
	ld, err := c.Leader(ctx, "scheduler")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leader:", ld.Value, "in its term:", ld.Term == a.Term())

	next := make(chan *redlock.Leadership)
	go func() {
		b, err := c.Campaign(ctx, "scheduler", "host-b:8080", 10*time.Second) // waits for a
		if err != nil {
			log.Fatal(err)
		}
		next <- b
	}()
	select {
	case <-a.Done(): // closed if the leadership is lost: stop acting as the leader
		log.Fatal(a.Err())
	case <-time.After(50 * time.Millisecond): // a's work as the leader
	}
	if err := a.Resign(ctx); err != nil {
		log.Fatal(err)
	}
	b := <-next
	defer b.Resign(ctx)
	fmt.Println("next leader:", b.Value(), "with a higher term:", b.Term() > a.Term())
	// Output:
	// no leader yet: true
	// leader: host-a:8080 in its term: true
	// next leader: host-b:8080 with a higher term: true
}

// Observe follows an election: the current leader, each change, and the
// zero Leader when nobody leads.
func ExampleClient_ObserveLeader() {
	c, stop := exampleClient()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	l, err := c.Campaign(ctx, "indexer", "worker-1", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	watch, stopWatching := context.WithCancel(ctx)
	defer stopWatching() // closes the channel
	leaders := c.ObserveLeader(watch, "indexer")
	fmt.Println("leader:", (<-leaders).Value)

	if err := l.Proclaim(ctx, "worker-1 (draining)"); err != nil {
		log.Fatal(err)
	}
	fmt.Println("proclaimed:", (<-leaders).Value)
	if err := l.Resign(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("nobody leads:", <-leaders == redlock.Leader{})
	// Output:
	// leader: worker-1
	// proclaimed: worker-1 (draining)
	// nobody leads: true
}

// Lead runs a function as the leader and resigns when it returns: the
// next campaigner, if any, leads at once.
func ExampleClient_Lead() {
	c, stop := exampleClient() // on three in-memory Redis nodes, as in Example
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	err := c.Lead(ctx, "scheduler", "host-a:8080", 10*time.Second, func(ctx context.Context) error {
		ld, err := c.Leader(ctx, "scheduler")
		if err != nil {
			return err
		}
		fmt.Println("leading as", ld.Value)
		// Schedule until done or ctx ends; on a lost leadership
		// context.Cause(ctx) wraps ErrLockLost: stop acting as the leader.
		return nil
	})
	if err != nil {
		log.Fatal(err) // Campaign's error (ErrNotObtained), fn's, or the loss
	}
	_, err = c.Leader(ctx, "scheduler")
	fmt.Println("resigned, nobody leads:", errors.Is(err, redlock.ErrNoLeader))
	// Output:
	// leading as host-a:8080
	// resigned, nobody leads: true
}

// Context ends with the leadership, for work that outlives one call.
func ExampleLeadership_Context() {
	c, stop := exampleClient() // on three in-memory Redis nodes, as in Example
	defer stop()
	ctx := context.Background()

	ls, err := c.Campaign(ctx, "indexer", "worker-1", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	lctx := ls.Context() // pass it to the leader's work
	fmt.Println("leading:", lctx.Err() == nil)
	if err := ls.Resign(ctx); err != nil {
		log.Fatal(err)
	}
	<-lctx.Done()
	fmt.Println("ended by Resign:", errors.Is(context.Cause(lctx), redlock.ErrNotHeld))
	// Output:
	// leading: true
	// ended by Resign: true
}

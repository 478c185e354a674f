package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// exampleNodes starts three in-memory Redis nodes for the examples. In
// production each pool points at an independent Redis master.
func exampleNodes() (pools []pool.Pool, stop func()) {
	var servers []*miniredis.Miniredis
	for range 3 {
		s, err := miniredis.Run()
		if err != nil {
			log.Fatal(err)
		}
		p, err := pool.FromURL("redis://" + s.Addr())
		if err != nil {
			log.Fatal(err)
		}
		servers = append(servers, s)
		pools = append(pools, p)
	}
	return pools, func() {
		for i := range pools {
			_ = pools[i].Close()
			servers[i].Close()
		}
	}
}

func Example() {
	pools, stop := exampleNodes()
	defer stop()

	// The per-node timeout defaults to min(ttl/20, 500ms), right for a LAN;
	// the examples run on busy test machines, so they give nodes longer.
	c, err := redlock.New(pools, redlock.WithNodeTimeout(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	l, err := c.Lock(ctx, "invoice:42", 10*time.Second)
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
	pools, stop := exampleNodes()
	defer stop()
	c, _ := redlock.New(pools, redlock.WithNodeTimeout(time.Second))
	defer c.Close()
	ctx := context.Background()

	first, _ := c.TryLock(ctx, "report", time.Minute)
	defer first.Unlock(ctx)

	_, err := c.TryLock(ctx, "report", time.Minute)
	fmt.Println(errors.Is(err, redlock.ErrNotObtained), errors.Is(err, redlock.ErrTaken))
	// Output: true true
}

func ExampleClient_Lock_timeout() {
	pools, stop := exampleNodes()
	defer stop()
	c, _ := redlock.New(pools, redlock.WithNodeTimeout(time.Second))
	defer c.Close()

	held, _ := c.TryLock(context.Background(), "report", time.Minute)
	defer held.Unlock(context.Background())

	// Wait at most 50ms for the lock.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Lock(ctx, "report", time.Minute)
	fmt.Println(errors.Is(err, redlock.ErrNotObtained), errors.Is(err, context.DeadlineExceeded))
	// Output: true true
}

func ExampleLock_Extend() {
	pools, stop := exampleNodes()
	defer stop()
	c, _ := redlock.New(pools, redlock.WithNodeTimeout(time.Second))
	defer c.Close()
	ctx := context.Background()

	l, _ := c.TryLock(ctx, "batch", 2*time.Second)
	defer l.Unlock(ctx)
	before := l.Until()
	if err := l.Extend(ctx, time.Minute); err != nil {
		log.Fatal(err) // errors.Is(err, redlock.ErrNotHeld): stop working
	}
	fmt.Println("validity moved forward:", l.Until().After(before))
	// Output: validity moved forward: true
}

package rueidispool_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/pool/rueidispool"
	"github.com/redlockgo/redlock/redlock"
)

func Example() {
	// Three in-memory nodes for the example; in production each URL names
	// an independent Redis master, e.g. rediss://user:password@redis-1:6379.
	var pools []pool.Pool
	for range 3 {
		s := miniredis.NewMiniRedis()
		if err := s.Start(); err != nil {
			log.Fatal(err)
		}
		defer s.Close()
		p, err := rueidispool.FromURL("redis://" + s.Addr())
		if err != nil {
			log.Fatal(err)
		}
		defer p.Close()
		pools = append(pools, p)
	}

	// A generous per-node timeout: examples run on busy test machines.
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
	fmt.Println("locked", l.Key())
	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("released")
	// Output:
	// locked invoice:42
	// released
}

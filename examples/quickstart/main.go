// Command quickstart is the README's Quick start as a program: five nodes,
// one Client, and a function run under the lock "invoice:42". The README's
// snippet is the body of quickstart below, as gofmt formats it (checked by
// TestReadmeQuickStartIsThisProgram), and CI runs this program against
// five stock redis-servers (TestQuickStartOnStockNodes).
//
//	go run ./examples/quickstart   # with nodes at r1..r5:6379
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := quickstart(ctx); err != nil {
		log.Print(err)
		stop()
		os.Exit(1)
	}
}

// bill is the work done under the lock.
func bill(ctx context.Context) error {
	fmt.Println("billed invoice 42")
	return ctx.Err()
}

func quickstart(ctx context.Context) error {
	// quickstart:begin
	// One Pool per node, or an error naming the bad URL; rediss:// for TLS,
	// redis://user:pass@host for ACLs.
	pools, err := pool.FromURLs([]string{"redis://r1:6379", "redis://r2:6379", "redis://r3:6379", "redis://r4:6379", "redis://r5:6379"})
	if err != nil {
		return err
	}
	for _, p := range pools {
		defer p.Close()
	}
	locks, err := redlock.New(pools)
	if err != nil {
		return err
	}
	defer locks.Shutdown(context.Background()) // on exit: release what is still held

	// Run a function under the lock. It is extended while fn runs, released
	// when fn returns (or panics), and fn's context is canceled before the
	// lock's validity ends if the lock is lost.
	err = locks.Do(ctx, "invoice:42", 10*time.Second, func(ctx context.Context) error {
		return bill(ctx) // stop when ctx is done: context.Cause(ctx) wraps redlock.ErrLockLost
	})
	return err // redlock.ErrNotObtained: someone else holds it, or no majority answered
	// quickstart:end
}

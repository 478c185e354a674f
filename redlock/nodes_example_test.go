package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/redlockgo/redlock/redlock"
)

// A program that provisions its nodes checks them before it serves: on a
// new deployment of nodes that do not persist every write it declares them
// fresh (DeclareFresh), which it refuses if any node holds a lock already.
func ExampleCheckNodes() {
	// Three in-memory Redis nodes, as in Example. They hide their uptime,
	// so the quarantine cannot age them and they count; stock redis-server
	// nodes on their first day would be quarantined.
	pools, stop := examplePools()
	defer stop()
	ctx := context.Background()

	r, err := redlock.CheckNodes(ctx, pools)
	if err != nil {
		log.Fatal(err)
	}
	for _, n := range r.Nodes {
		if !n.Counts {
			fmt.Printf("node %d: quarantined for %v more (persistence %s)\n", n.Node, n.Quarantined, n.Persistence)
		}
	}
	fmt.Printf("%d of %d nodes count, %d needed\n", r.Counting, len(r.Nodes), r.Needed)

	if !r.OK() {
		_, err := redlock.DeclareFresh(ctx, pools)
		if errors.Is(err, redlock.ErrNotFresh) {
			log.Fatal("not a new deployment: ", err)
		}
	}
	// Output:
	// 3 of 3 nodes count, 2 needed
}

// Package cluster runs a set of independent Redis masters for tests,
// benchmarks and fault-injection runs of the lock, and breaks them on
// demand. Each node runs in a container, or as a local redis-server process
// where no Docker engine answers, behind an in-process toxiproxy proxy whose
// address never changes, so that a node can be killed and restarted under
// a client's feet and the network to it slowed, blackholed, reset or cut:
//
//	c := cluster.Start(t) // five nodes, removed when t ends
//	cl, err := redlock.New(c.Pools())
//	_ = c.Node(0).Kill(ctx)            // a crash
//	_ = c.Node(1).Slow(200 * time.Millisecond)
//	_ = c.Node(2).Partition()          // clients cut off
//	e, _ := c.Node(3).Peek(ctx, "key") // what the node holds, bypassing faults
//	_ = c.Reset(ctx)                   // all healthy again
//
// Node operations return errors rather than failing the test, and are safe
// for concurrent use. REDLOCK_IT_BACKEND and REDLOCK_REDIS_IMAGE select the
// backend and image: see integration/README.md.
package cluster

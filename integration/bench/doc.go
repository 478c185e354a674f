// Package bench measures this library side by side with
// github.com/go-redsync/redsync/v4 and with the raw floor of the algorithm
// (SET NX PX and a compare-and-delete script sent to every node in parallel
// with go-redis, returning at a majority, no library around it), on five
// Redis nodes behind the fault-injecting proxies of package cluster.
//
// Every scenario runs the three implementations in one process, interleaved:
// round after round, each gets a short slice of time in turn (the order
// rotates), so that noise from a shared 2-core machine hits all alike and
// the ratios between them hold even when absolute times drift.
//
// Two entry points:
//
//   - TestReport, skipped unless REDLOCK_BENCH_OUT names a directory: runs
//     every scenario once, writes the table and the machine into
//     performance.md there (between the markers, keeping the prose around
//     them) and the latency plot into performance-latency.png. `make bench`
//     runs it.
//   - BenchmarkCluster: the same implementations as testing.B benchmarks
//     with -benchmem, for benchstat across commits.
//
// TestReport's scale row (scale.go) runs this library alone over 3 Redis
// Clusters of 3 masters against 3 single nodes, on local processes of its
// own; TestScale runs it by itself and BenchmarkScale as a benchmark.
//
// Nothing here asserts speed: figures are reported, never tested.
package bench

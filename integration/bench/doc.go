// Package bench measures this library side by side with
// github.com/go-redsync/redsync/v4 and with the raw floor of the algorithm
// (SET NX PX and a compare-and-delete script sent to every node in parallel,
// returning at a majority), on five Redis nodes behind the fault-injecting
// proxies of package cluster. Every scenario runs the implementations in
// one process, interleaved in short rotating slices, so that noise on a
// shared machine hits all alike.
//
// TestReport, skipped unless REDLOCK_BENCH_OUT names a directory, runs every
// scenario once and writes performance.md and its latency plot there (`make
// bench`); BenchmarkCluster and BenchmarkScale are the same as testing.B
// benchmarks, for benchstat across commits. Nothing here asserts speed.
package bench

package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// BenchmarkScale compares, in one run, lock+unlock by 64 goroutines on
// distinct keys over three single Redis nodes and over three Redis Clusters
// of three masters (local processes, no proxies):
//
//	cd integration
//	go test ./bench -run '^$' -bench Scale -benchtime 3s
//
// Besides ns/op it reports each Redis process's share of one core while the
// benchmark ran (busiest-cpu-%: the busiest process; redis-cpu-%: all of
// them together), read from /proc: on a machine where the client saturates
// the cores, throughput says little about the shards, and the per-shard load
// says how far they are from their own limit.
func BenchmarkScale(b *testing.B) {
	// Both sets run at once, started before the sub-benchmarks, whose
	// bodies run once per b.N tried.
	servers := redistest.StartN(b, 3, redistest.NoPersistence)
	single := make([]pool.Pool, len(servers))
	for i, s := range servers {
		single[i] = benchPool(b, s.URL())
	}
	clusters := redistest.StartClusters(b, 3, 3, redistest.NoPersistence)
	var sharded []pool.Pool
	var masters []*redistest.Server
	for _, c := range clusters {
		addrs := c.Addrs()
		sharded = append(sharded, benchPool(b, "redis+cluster://"+addrs[0]+"?addr="+strings.Join(addrs[1:], "&addr=")))
		masters = append(masters, c.Masters...)
	}
	b.Run("3-single-nodes", func(b *testing.B) { scale(b, single, servers) })
	b.Run("3-clusters-of-3", func(b *testing.B) { scale(b, sharded, masters) })
}

// benchPool returns pool.FromURL(url), closed when b ends.
func benchPool(b *testing.B, url string) pool.Pool {
	p, err := pool.FromURL(url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	return p
}

// scale runs the 64 goroutines over pools and reports the CPU shares of
// servers.
func scale(b *testing.B, pools []pool.Pool, servers []*redistest.Server) {
	c, err := redlock.New(pools)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), benchBound)
	defer cancel()
	var id, errs atomic.Int64
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	before := cpuTimes(b, servers)
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		key := "bench:scale:" + strconv.FormatInt(id.Add(1), 10)
		for pb.Next() {
			l, err := c.TryLock(ctx, key, 10*time.Second)
			if err == nil {
				err = l.Unlock(ctx)
			}
			if err != nil {
				errs.Add(1)
			}
		}
	})
	b.StopTimer()
	wall := time.Since(start)
	after := cpuTimes(b, servers)
	var total, busiest time.Duration
	for i := range servers {
		d := after[i] - before[i]
		total += d
		busiest = max(busiest, d)
	}
	b.ReportMetric(100*busiest.Seconds()/wall.Seconds(), "busiest-cpu-%")
	b.ReportMetric(100*total.Seconds()/wall.Seconds(), "redis-cpu-%")
	b.ReportMetric(float64(errs.Load())/float64(b.N), "errors/op")
}

// cpuTimes returns the CPU time (user and system) each server's process has
// used, from /proc/PID/stat.
func cpuTimes(b *testing.B, servers []*redistest.Server) []time.Duration {
	const ticks = 100 // USER_HZ on Linux
	out := make([]time.Duration, len(servers))
	for i, s := range servers {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.PID()))
		if err != nil {
			b.Fatalf("CPU time of %s: %v", s.Addr(), err)
		}
		// Fields after the command name, which ends with the last ')'.
		f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		out[i] = time.Duration(utime+stime) * time.Second / ticks
	}
	return out
}

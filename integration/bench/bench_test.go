package bench

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/integration/cluster"
)

// BenchmarkCluster measures lock+unlock of the three implementations on
// five fresh nodes, for benchstat across commits:
//
//	cd integration
//	go test ./bench -run '^$' -bench Cluster -benchmem -count 6 > new.txt
//	benchstat old.txt new.txt
//
// Sub-benchmarks: Serial/{proxy,direct}/IMPL (one lock+unlock at a time,
// through the proxies or straight to Redis), Parallel/IMPL (64 goroutines
// on distinct keys, with GOMAXPROCS 2), Family/CALL (TryLock, TryLockAll
// over 4 keys and TryRLock, each with Unlock, straight to Redis) and
// SlowNode/IMPL (one node's replies 20ms late). Failed operations are
// counted in the errors/op metric rather than failing the benchmark: a
// loaded machine can make the node timeouts of this library and the floor
// expire now and then.
func BenchmarkCluster(b *testing.B) {
	c := cluster.Start(b)
	for _, r := range []route{viaProxy, direct} {
		b.Run("Serial/"+r.String(), func(b *testing.B) {
			for _, e := range benchEntrants(b, c, r) {
				b.Run(e.name, func(b *testing.B) { serial(b, e) })
			}
		})
	}
	b.Run("Parallel", func(b *testing.B) {
		for _, e := range benchEntrants(b, c, viaProxy) {
			b.Run(e.name, func(b *testing.B) { parallel(b, e, 64) })
		}
	})
	b.Run("Family", func(b *testing.B) {
		healthy(b, c)
		b.Cleanup(func() { healthy(b, c) })
		f := newFleet(c, direct)
		b.Cleanup(func() { closeFleet(b, f) })
		for _, e := range familyEntrants(b, f) {
			b.Run(e.name, func(b *testing.B) { serial(b, e) })
		}
	})
	b.Run("SlowNode", func(b *testing.B) {
		es := benchEntrants(b, c, viaProxy)
		if err := faulty(c).Slow(20 * time.Millisecond); err != nil {
			b.Fatal(err)
		}
		for _, e := range es {
			b.Run(e.name, func(b *testing.B) { serial(b, e) })
		}
	})
}

// benchEntrants returns the three implementations on healthy, empty nodes,
// closed when b ends (before the nodes are healed for the next one).
func benchEntrants(b *testing.B, c *cluster.Cluster, r route) []entrant {
	b.Helper()
	healthy(b, c)
	b.Cleanup(func() { healthy(b, c) })
	f := newFleet(c, r)
	b.Cleanup(func() { closeFleet(b, f) })
	es := standard(b, f)
	latency(context.Background(), "bench:warm", es, plan{rounds: 1, slice: 20 * time.Millisecond})
	return es
}

// benchBound keeps a Lock that retries forever (this library's default) from
// hanging a benchmark; the operations allocate no context of their own.
const benchBound = 5 * time.Minute

func serial(b *testing.B, e entrant) {
	ctx, cancel := context.WithTimeout(context.Background(), benchBound)
	defer cancel()
	key := "bench:serial:" + e.name
	l := e.lockers[0]
	errs := 0
	b.ReportAllocs()
	for b.Loop() {
		if err := lockUnlock(ctx, l, key); err != nil {
			errs++
		}
	}
	b.ReportMetric(float64(errs)/float64(b.N), "errors/op")
}

func parallel(b *testing.B, e entrant, goroutines int) {
	ctx, cancel := context.WithTimeout(context.Background(), benchBound)
	defer cancel()
	l := e.lockers[0]
	var id, errs atomic.Int64
	b.SetParallelism(max(1, goroutines/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		key := "bench:parallel:" + e.name + ":" + strconv.FormatInt(id.Add(1), 10)
		for pb.Next() {
			if err := lockUnlock(ctx, l, key); err != nil {
				errs.Add(1)
			}
		}
	})
	b.ReportMetric(float64(errs.Load())/float64(b.N), "errors/op")
}

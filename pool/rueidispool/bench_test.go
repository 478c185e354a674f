package rueidispool_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/pool/rueidispool"
	"github.com/redlockgo/redlock/redlock"
)

// adapters are the client adapters compared by the benchmarks, each making a
// Pool for one node URL.
var adapters = []struct {
	name string
	open func(b *testing.B, url string) pool.Pool
}{
	{"go-redis", func(b *testing.B, url string) pool.Pool {
		p, err := pool.FromURL(url)
		if err != nil {
			b.Fatal(err)
		}
		return p
	}},
	{"rueidis", func(b *testing.B, url string) pool.Pool {
		p, err := rueidispool.FromURL(url)
		if err != nil {
			b.Fatal(err)
		}
		return p
	}},
	// rueidis with a connection per concurrent call, as go-redis does.
	{"rueidis-no-pipelining", func(b *testing.B, url string) pool.Pool {
		o, err := rueidis.ParseURL(url)
		if err != nil {
			b.Fatal(err)
		}
		o.ForceSingleClient, o.DisableCache, o.DisableRetry, o.DisableAutoPipelining = true, true, true, true
		c, err := rueidis.NewClient(o)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		return rueidispool.New(c)
	}},
}

// openNodes starts n redis-servers and opens one Pool per node with open.
func openNodes(b *testing.B, n int, open func(*testing.B, string) pool.Pool) []pool.Pool {
	b.Helper()
	pools := make([]pool.Pool, n)
	for i, s := range redistest.StartN(b, n, redistest.NoPersistence) {
		pools[i] = open(b, s.URL())
		b.Cleanup(func() { _ = pools[i].Close() })
	}
	return pools
}

// BenchmarkSetNX measures one node call from many goroutines: where
// auto-pipelining matters.
func BenchmarkSetNX(b *testing.B) {
	for _, a := range adapters {
		b.Run(a.name, func(b *testing.B) {
			p := openNodes(b, 1, a.open)[0]
			var n atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(8) // many callers per core, as in a busy service
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := p.SetNX(b.Context(), "k:"+strconv.FormatInt(n.Add(1), 10), "v", time.Minute); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkLockUnlock measures a whole lock (TryLock then Unlock) over three
// nodes, one at a time and from many goroutines.
func BenchmarkLockUnlock(b *testing.B) {
	for _, a := range adapters {
		b.Run(a.name, func(b *testing.B) {
			c, err := redlock.New(openNodes(b, 3, a.open), redlock.WithNodeTimeout(time.Second))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = c.Close() })
			var n atomic.Int64
			lockUnlock := func() error {
				l, err := c.TryLock(b.Context(), "k:"+strconv.FormatInt(n.Add(1), 10), time.Minute)
				if err != nil {
					return err
				}
				return l.Unlock(b.Context())
			}
			b.Run("serial", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := lockUnlock(); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("parallel", func(b *testing.B) {
				b.ReportAllocs()
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := lockUnlock(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		})
	}
}

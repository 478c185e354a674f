package redlock_test

import (
	"context"
	"crypto/rand"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// BenchmarkLockUnlock measures one uncontended lock+unlock on five real
// redis-server processes. Compare commits with benchstat.
func BenchmarkLockUnlock(b *testing.B) {
	_, pools := realNodes(b, 5)
	c, err := redlock.New(pools)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	for b.Loop() {
		l, err := c.TryLock(bg(), "bench", 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(bg()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLockUnlockParallel measures throughput on distinct keys.
func BenchmarkLockUnlockParallel(b *testing.B) {
	_, pools := realNodes(b, 5)
	c, err := redlock.New(pools)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	var id int64
	b.RunParallel(func(pb *testing.PB) {
		key := "bench:" + strconv.FormatInt(nextID(&id), 10)
		for pb.Next() {
			l, err := c.TryLock(bg(), key, 10*time.Second)
			if err != nil {
				b.Error(err)
				return
			}
			if err := l.Unlock(bg()); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkTryLockContended measures a refused attempt (the key is held).
func BenchmarkTryLockContended(b *testing.B) {
	_, pools := realNodes(b, 5)
	c, err := redlock.New(pools)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	held, err := c.TryLock(bg(), "bench", time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	defer held.Unlock(bg())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.TryLock(bg(), "bench", time.Minute); err == nil {
			b.Fatal("obtained a held lock")
		}
	}
}

// BenchmarkUncontendedVsFloor compares one uncontended lock+unlock with the
// raw floor of the algorithm on the same five direct connections (no
// proxy), interleaved so that both see the same machine: the floor is SET
// NX PX on every node, then a compare-and-delete script, each returning at
// the majority, with go-redis and nothing else. It reports both p50s and
// their ratio. Two pairs: TryLock against a floor whose fan-outs each pay
// a context with a deadline, as the library's do; and Lock against the
// leanest floor, a goroutine per node with no deadline at all (issue 38's
// measure).
func BenchmarkUncontendedVsFloor(b *testing.B) {
	b.Run("TryLock-timed-floor", func(b *testing.B) {
		vsFloor(b, true, func(c *redlock.Client) (*redlock.Lock, error) { return c.TryLock(bg(), "ours", 10*time.Second) })
	})
	b.Run("Lock-lean-floor", func(b *testing.B) {
		vsFloor(b, false, func(c *redlock.Client) (*redlock.Lock, error) { return c.Lock(bg(), "ours", 10*time.Second) })
	})
	// The same over pool.New pools (a go-redis client of the caller's, as
	// most users wire the library in): its dial hook reads each
	// connection's identity, so calls go as they are, as over FromURL.
	b.Run("TryLock-timed-floor-pool.New", func(b *testing.B) {
		vsFloor(b, true, func(c *redlock.Client) (*redlock.Lock, error) { return c.TryLock(bg(), "ours", 10*time.Second) }, usersClients)
	})
}

// usersClients makes pool.New pools over go-redis clients of the
// caller's, with FromURL's settings for a lock.
func usersClients(b *testing.B, servers []*redistest.Server) []pool.Pool {
	pools := make([]pool.Pool, len(servers))
	for i, s := range servers {
		rc := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
		b.Cleanup(func() { _ = rc.Close() })
		pools[i] = pool.New(rc)
	}
	return pools
}

// vsFloor is BenchmarkUncontendedVsFloor for one pair: lock against the
// floor, timed or lean.
func vsFloor(b *testing.B, timed bool, lock func(c *redlock.Client) (*redlock.Lock, error), over ...func(*testing.B, []*redistest.Server) []pool.Pool) {
	servers, pools := realNodes(b, 5)
	for _, o := range over {
		pools = o(b, servers)
	}
	c, err := redlock.New(pools)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	clients := make([]*redis.Client, len(servers))
	for i, s := range servers {
		clients[i] = redis.NewClient(&redis.Options{Addr: s.Addr()})
		defer clients[i].Close()
	}
	del := redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
	var wg sync.WaitGroup
	defer wg.Wait()
	fan := func(op func(ctx context.Context, rc *redis.Client) bool) bool {
		call := &floorCall{answers: make(chan bool, len(clients)), ctx: bg(), cancel: func() {}}
		if timed {
			call.ctx, call.cancel = context.WithTimeout(bg(), 500*time.Millisecond)
		}
		call.running.Store(int32(len(clients)))
		wg.Add(len(clients))
		for _, rc := range clients {
			go func() {
				defer wg.Done()
				call.answers <- op(call.ctx, rc)
				if call.running.Add(-1) == 0 {
					call.cancel() // the last call out releases the deadline's timer
				}
			}()
		}
		yes, no := 0, 0
		for yes < 3 && no <= 2 {
			if <-call.answers {
				yes++
			} else {
				no++
			}
		}
		return yes >= 3
	}
	floor := func() {
		token := rand.Text()
		if !fan(func(ctx context.Context, rc *redis.Client) bool {
			return rc.SetArgs(ctx, "floor", token, redis.SetArgs{Mode: "NX", TTL: 10 * time.Second}).Err() == nil
		}) {
			b.Fatal("floor: not obtained")
		}
		if !fan(func(ctx context.Context, rc *redis.Client) bool {
			n, err := del.Run(ctx, rc, []string{"floor"}, token).Int64()
			return err == nil && n == 1
		}) {
			b.Fatal("floor: not released")
		}
	}
	ours := func() {
		l, err := lock(c)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(bg()); err != nil {
			b.Fatal(err)
		}
	}
	for range 200 { // warm up connections and script caches
		floor()
		ours()
	}
	var tf, to []time.Duration
	for i := 0; b.Loop(); i++ {
		// Alternate which goes first: the second runs while the first's
		// stragglers finish.
		first, second := floor, ours
		tfirst, tsecond := &tf, &to
		if i%2 == 1 {
			first, second, tfirst, tsecond = ours, floor, &to, &tf
		}
		s := time.Now()
		first()
		*tfirst = append(*tfirst, time.Since(s))
		s = time.Now()
		second()
		*tsecond = append(*tsecond, time.Since(s))
	}
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds())
	}
	pf, po := p50(tf), p50(to)
	b.ReportMetric(pf, "floor-p50-µs")
	b.ReportMetric(po, "ours-p50-µs")
	b.ReportMetric(po/pf, "ratio")
}

// floorCall is one fan-out of the floor: its node calls share one deadline,
// canceled by the last of them to finish, after the caller may have
// returned at the majority.
type floorCall struct {
	ctx     context.Context
	cancel  context.CancelFunc
	answers chan bool
	running atomic.Int32
}

// BenchmarkLockUnlockLogged is BenchmarkLockUnlock with a logger that
// discards (WithLogger): the degraded warnings' check after each success
// (degraded.go) must cost a healthy Client no allocation.
func BenchmarkLockUnlockLogged(b *testing.B) {
	_, pools := realNodes(b, 5)
	c, err := redlock.New(pools, redlock.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	for b.Loop() {
		l, err := c.TryLock(bg(), "bench", 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(bg()); err != nil {
			b.Fatal(err)
		}
	}
}

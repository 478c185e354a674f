package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// entrant is one column of a scenario: an implementation under its name.
// In a contention scenario it has one locker per worker (the same one when
// the workers share a client).
type entrant struct {
	name    string
	lockers []locker
	// fault, when set, breaks a node before each of the entrant's
	// contention slices, and heal (required with it) repairs the node once
	// the slice's waits have drained: a faulty variant interleaves with
	// healthy ones.
	fault, heal func() error
}

func one(name string, l locker) entrant { return entrant{name: name, lockers: []locker{l}} }

// plan bounds an interleaved scenario: rounds of slices, each entrant in
// turn, the order rotating every round so that no entrant always follows
// the same one.
type plan struct {
	rounds int
	slice  time.Duration
	// caps limits the operations of an entrant over the whole scenario (0:
	// no limit), for one that takes seconds per operation.
	caps map[string]int
	// allocs measures heap allocations per operation (runtime.MemStats,
	// process-wide): meaningful only with nothing else running.
	allocs bool
	// warmUp, in a contention scenario, is the length of a first slice
	// per entrant, on healthy nodes, that is not counted (0: none).
	warmUp time.Duration
}

// order returns the entrants' order in round r.
func order(es []entrant, r int) []entrant {
	out := make([]entrant, len(es))
	for j := range es {
		out[j] = es[(r+j)%len(es)]
	}
	return out
}

// series is what one entrant did in a latency scenario.
type series struct {
	lat      durations // each successful lock+unlock
	ops      int       // attempted
	errs     int       // failed, not in lat
	firstErr error
	// Allocation counts over the measured operations (when plan.allocs).
	mallocs, bytes uint64
	measured       int
}

// allocsPerOp returns mallocs and bytes per operation, or -1 when not
// measured.
func (s *series) allocsPerOp() (float64, float64) {
	if s.measured == 0 {
		return -1, -1
	}
	return float64(s.mallocs) / float64(s.measured), float64(s.bytes) / float64(s.measured)
}

// settle is the pause after an allocation batch before the heap counters
// are read again, so that node calls still finishing in the background
// (after the majority answered) are charged to the entrant that started them.
const settle = 5 * time.Millisecond

// latency runs sequential lock+unlock operations on one key per entrant,
// interleaved by p, and records the time of each.
func latency(ctx context.Context, key string, es []entrant, p plan) map[string]*series {
	out := make(map[string]*series, len(es))
	for _, e := range es {
		out[e.name] = &series{lat: make(durations, 0, 1<<14)}
	}
	for r := range p.rounds {
		for _, e := range order(es, r) {
			s, limit := out[e.name], p.caps[e.name]
			if limit > 0 && s.ops >= limit {
				continue
			}
			var m0 runtime.MemStats
			if p.allocs {
				runtime.ReadMemStats(&m0)
			}
			l, k, n0 := e.lockers[0], key+":"+e.name, s.ops
			end := time.Now().Add(p.slice)
			for (limit == 0 || s.ops < limit) && (s.ops == n0 || time.Now().Before(end)) {
				s.ops++
				start := time.Now()
				err := lockUnlock(ctx, l, k)
				d := time.Since(start)
				if err != nil {
					s.errs++
					s.firstErr = firstOf(s.firstErr, err)
					continue
				}
				s.lat = append(s.lat, d)
			}
			if p.allocs {
				time.Sleep(settle)
				var m1 runtime.MemStats
				runtime.ReadMemStats(&m1)
				s.mallocs += m1.Mallocs - m0.Mallocs
				s.bytes += m1.TotalAlloc - m0.TotalAlloc
				s.measured += s.ops - n0
			}
		}
	}
	return out
}

func lockUnlock(ctx context.Context, l locker, key string) error {
	h, err := l.Lock(ctx, key)
	if err != nil {
		return err
	}
	return l.Unlock(ctx, h)
}

// contended is what one entrant did in a contention scenario.
type contended struct {
	// waits holds, per acquisition, the time from wanting the lock to
	// holding it, across Lock calls that gave up in between.
	waits durations
	// acquired counts the acquisitions made within the slices (those of
	// the drain after a slice are in waits only).
	acquired int
	// window is the slices' total length.
	window time.Duration
	// gaveUp counts Lock calls that returned an error (a worker then calls
	// Lock again: its wait goes on).
	gaveUp   int
	firstErr error
	// unfinished counts waits cut off by the drain bound; their time so far
	// is in waits, as a lower bound.
	unfinished int
	// late counts Lock calls that returned more than lateBy after their
	// context's deadline, and latest is the most any of them overran it.
	late   int
	latest time.Duration
	// holds holds, per acquisition, the time from Lock's return to the
	// Unlock call (holdFor).
	holds durations
}

// holdFor keeps the lock for d, spinning on the clock and yielding the
// processor between looks, and returns how long it took. It does not
// sleep: Go's network poller waits for timers in whole milliseconds, so a
// 1ms time.Sleep lasts 1 to 2 ms depending on the network traffic the
// process handles meanwhile (measured here: 1.7 ms in a process running
// redlock, whose remaining grants and queue calls arrive during the hold,
// against 1.1 ms in redsync's, quiet while its waiters sleep), and the
// variants would not hold the lock for the same time.
func holdFor(d time.Duration) time.Duration {
	start := time.Now()
	for time.Since(start) < d {
		runtime.Gosched()
	}
	return time.Since(start)
}

// lateBy is how far past its context's deadline a Lock call may return
// before contended.late counts it: well beyond the scheduling delays of a
// loaded machine.
const lateBy = time.Second

// contention runs, in each slice, len(e.lockers) workers that take one key,
// hold it for hold and release it, again and again. At the end of a slice
// the workers start no new wait, but each finishes the one it is in
// (bounded by drain), so that the longest waits are measured, not cut off.
// With p.warmUp, each entrant first runs a slice that long on healthy
// nodes, which is not counted.
// It returns an error, with the figures so far, when a fault could not be
// injected or repaired.
func contention(ctx context.Context, key string, es []entrant, p plan, hold, drain time.Duration) (map[string]*contended, error) {
	out := make(map[string]*contended, len(es))
	for _, e := range es {
		out[e.name] = &contended{}
		if p.warmUp > 0 {
			contendSlice(ctx, key+":"+e.name, e.lockers, p.warmUp, hold, drain, &contended{})
		}
	}
	for r := range p.rounds {
		for _, e := range order(es, r) {
			if err := e.contend(ctx, key+":"+e.name, p.slice, hold, drain, out[e.name]); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// contend runs one contention slice of e, with its fault in place. The fault
// is healed when the slice's waits have finished or, should a Lock call
// overrun its context, at the end of the drain: a slice never lasts longer.
func (e entrant) contend(ctx context.Context, key string, slice, hold, drain time.Duration, c *contended) error {
	if e.fault == nil {
		contendSlice(ctx, key, e.lockers, slice, hold, drain, c)
		return nil
	}
	if err := e.fault(); err != nil {
		return fmt.Errorf("%s: inject the fault: %w", e.name, errors.Join(err, e.heal()))
	}
	var once sync.Once
	var healErr error
	heal := func() { once.Do(func() { healErr = e.heal() }) }
	t := time.AfterFunc(slice+drain, heal)
	contendSlice(ctx, key, e.lockers, slice, hold, drain, c)
	t.Stop()
	heal()
	if healErr != nil {
		return fmt.Errorf("%s: heal: %w", e.name, healErr)
	}
	return nil
}

func contendSlice(ctx context.Context, key string, lockers []locker, slice, hold, drain time.Duration, c *contended) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	end := time.Now().Add(slice)
	deadline := end.Add(drain)
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for _, l := range lockers {
		wg.Go(func() {
			for time.Now().Before(end) {
				start := time.Now()
				var h any
				var err error
				for {
					h, err = l.Lock(wctx, key)
					over := time.Since(deadline)
					mu.Lock()
					if over > lateBy {
						c.late++
						c.latest = max(c.latest, over)
					}
					mu.Unlock()
					if err == nil || wctx.Err() != nil {
						break
					}
					mu.Lock()
					c.gaveUp++
					c.firstErr = firstOf(c.firstErr, err)
					mu.Unlock()
				}
				wait := time.Since(start)
				mu.Lock()
				c.waits = append(c.waits, wait)
				if err != nil {
					c.unfinished++
				} else if start.Add(wait).Before(end) {
					c.acquired++
				}
				mu.Unlock()
				if err != nil {
					return
				}
				held := holdFor(hold)
				mu.Lock()
				c.holds = append(c.holds, held)
				mu.Unlock()
				if err := l.Unlock(context.WithoutCancel(wctx), h); err != nil {
					mu.Lock()
					c.firstErr = firstOf(c.firstErr, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	c.window += slice
}

func firstOf(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// rate is what one entrant did in a throughput scenario.
type rate struct {
	ops, errs int
	elapsed   time.Duration
	firstErr  error
}

// perSecond returns the successful operations per second.
func (r *rate) perSecond() float64 {
	if r.elapsed <= 0 {
		return -1
	}
	return float64(r.ops-r.errs) / r.elapsed.Seconds()
}

// grace bounds how long an operation begun in a throughput slice may last
// after it.
const grace = 5 * time.Second

// throughput runs goroutines workers per slice, each on a key of its own,
// doing lock+unlock as fast as they can, and counts the operations.
func throughput(ctx context.Context, key string, es []entrant, p plan, goroutines int) map[string]*rate {
	out := make(map[string]*rate, len(es))
	for _, e := range es {
		out[e.name] = &rate{}
	}
	for r := range p.rounds {
		for _, e := range order(es, r) {
			res := out[e.name]
			var mu sync.Mutex
			var wg sync.WaitGroup
			start := time.Now()
			end := start.Add(p.slice)
			// A lock that keeps failing must not hold the slice up for long.
			sctx, cancel := context.WithDeadline(ctx, end.Add(grace))
			for g := range goroutines {
				k := key + ":" + e.name + ":" + strconv.Itoa(g)
				wg.Go(func() {
					ops, errs := 0, 0
					var first error
					for time.Now().Before(end) {
						if err := lockUnlock(sctx, e.lockers[0], k); err != nil {
							errs++
							first = firstOf(first, err)
						}
						ops++
					}
					mu.Lock()
					res.ops += ops
					res.errs += errs
					res.firstErr = firstOf(res.firstErr, first)
					mu.Unlock()
				})
			}
			wg.Wait()
			cancel()
			res.elapsed += time.Since(start)
		}
	}
	return out
}

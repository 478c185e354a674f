package node

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redlockgo/redlock/internal/scripts"
)

// DriftConstant is added to every drift allowance for the granularity of
// Redis expiry.
const DriftConstant = 2 * time.Millisecond

// clockWindow is how many readings of a node's clock a comparison spans.
const clockWindow = 10

// clockSample is one reading of a node's clock: when the request was sent
// and its answer arrived on the local clock, and the node's time.
type clockSample struct {
	sent, recv time.Time
	node       time.Duration // since the Unix epoch, on the node's clock
}

// clockWatch judges the nodes' clocks from their readings.
type clockWatch struct {
	factor float64       // the drift factor
	hold   time.Duration // how long a node stays out after a fault

	running sync.WaitGroup // the readings' goroutine, which stop waits for

	mu    sync.Mutex
	nodes []clockTrack
}

type clockTrack struct {
	ring     []clockSample // the latest readings, oldest first
	badUntil time.Time     // the node does not count before this
	fault    error         // the latest fault
}

func newClockWatch(n int, factor float64, hold time.Duration) *clockWatch {
	return &clockWatch{factor: factor, hold: hold, nodes: make([]clockTrack, n)}
}

// stop waits for the readings to end, once their stop channel is closed.
func (w *clockWatch) stop() {
	if w != nil {
		w.running.Wait()
	}
}

// add records a reading of node i. It returns the fault it shows when the
// node was counted until now, nil otherwise (no fault, or one already
// reported whose hold it only extends).
func (w *clockWatch) add(i int, s clockSample) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := &w.nodes[i]
	if len(t.ring) == 0 {
		t.ring = append(t.ring, s)
		return nil
	}
	old := t.ring[0]
	local := s.recv.Sub(old.sent) // the longest our clock can have advanced
	advanced := s.node - old.node
	allowed := local + time.Duration(float64(local)*w.factor) + DriftConstant
	if local <= 0 || advanced <= allowed {
		t.ring = append(t.ring, s)
		if len(t.ring) > clockWindow {
			t.ring = t.ring[1:]
		}
		return nil
	}
	mid := s.recv.Sub(old.recv)/2 + s.sent.Sub(old.sent)/2
	err := fmt.Errorf("%w: its clock advanced %v while ours advanced %v (rate %.3f; at most %v allowed, rate %.3f)",
		ErrClock, advanced.Round(time.Millisecond), mid.Round(time.Millisecond),
		float64(advanced)/float64(mid), allowed.Round(time.Millisecond), 1+w.factor)
	counted := !s.recv.Before(t.badUntil)
	t.ring = append(t.ring[:0], s) // measure afresh from here
	t.badUntil, t.fault = s.recv.Add(w.hold), err
	if counted {
		return err
	}
	return nil
}

// suspect returns node i's latest fault while the node is out, nil when it
// counts.
func (w *clockWatch) suspect(i int, now time.Time) error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if t := &w.nodes[i]; now.Before(t.badUntil) {
		return t.fault
	}
	return nil
}

// clockCheck is the health check of one node's clock.
type clockCheck struct {
	w   *clockWatch
	set *Set
}

func (c clockCheck) check(_ context.Context, i int, _ string) error {
	return c.w.suspect(i, c.set.cfg.Clock.Now())
}

// watchClocks reads every node's clock every cfg.ClockEvery until stop is
// closed; Stop waits for it.
func (s *Set) watchClocks(stop <-chan struct{}) {
	defer s.clocks.running.Done()
	for {
		t := s.cfg.Clock.NewTimer(s.cfg.ClockEvery)
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C():
		}
		var wg sync.WaitGroup
		for i := range s.pools {
			wg.Go(func() { s.readClock(i) })
		}
		wg.Wait()
	}
}

// readClock reads node i's clock once, bounded by the node timeout, and
// reports a new fault.
func (s *Set) readClock(i int) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	sent := s.cfg.Clock.Now()
	v, err := s.pools[i].Eval(ctx, scripts.Time, nil)
	recv := s.cfg.Clock.Now()
	if err != nil {
		return // a node that does not answer votes for no one anyway
	}
	node, ok := parseTime(v)
	if !ok {
		return
	}
	if fault := s.clocks.add(i, clockSample{sent: sent, recv: recv, node: node}); fault != nil {
		s.cfg.Report(ctx, i, ClockFault, fault)
	}
}

// parseTime reads TIME's { seconds, microseconds } as time since the epoch.
func parseTime(v any) (time.Duration, bool) {
	arr, _ := v.([]any)
	if len(arr) != 2 {
		return 0, false
	}
	sec, err1 := strconv.ParseInt(fmt.Sprint(arr[0]), 10, 64)
	usec, err2 := strconv.ParseInt(fmt.Sprint(arr[1]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(sec)*time.Second + time.Duration(usec)*time.Microsecond, true
}

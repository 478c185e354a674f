package redlock

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redlockgo/redlock/internal/scripts"
)

// WithClockCheck makes the Client read every node's clock (TIME) every d,
// in the background, and compare its progress with the Client's monotonic
// clock over the last clockWindow readings. A node whose clock advanced
// more than the drift allowance permits (the drift factor of the elapsed
// time, plus 2ms), counting the round trips against the node, ran fast or
// jumped forward: it expires keys early. Its yes then does not count toward
// acquisitions, grants, extensions or fences (the per-node error wraps
// ErrNodeClock) until the quarantine (WithQuarantine; MaxTTL plus drift
// when that is off) has passed without a new fault, since keys it holds
// from before the fault may expire early for that long. Each fault is
// reported once as a NodeClockFault event with the measured rate.
//
// The check is off by default (d = 0). It costs one TIME per node every d,
// never on the path of a call; each is bounded by the node timeout, and
// Close stops the readings. It sees a fault only after it happened: a jump
// between two readings can still shorten a lock taken just before it was
// noticed. It does not see a slow clock, which only keeps keys longer.
//
// d is 0 or between MinClockCheck and MaxTTL; New refuses any other value.
func WithClockCheck(d time.Duration) Option {
	return func(c *config) {
		if d != 0 && (d < MinClockCheck || d > MaxTTL) {
			c.fail("clock check interval must be 0 (off) or between %v and %v, got %v", MinClockCheck, MaxTTL, d)
			return
		}
		c.clockEvery = d
	}
}

// MinClockCheck is the shortest interval WithClockCheck accepts. Readings
// closer together tell no more (a comparison spans the last ten, and the
// round trips widen its bound), while each costs a TIME on every node: a
// nanosecond, a likely unit mistake, would send thousands a second.
const MinClockCheck = 10 * time.Millisecond

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

// stop waits for the readings to end; the Client has closed c.closing.
func (w *clockWatch) stop() {
	if w != nil {
		w.running.Wait()
	}
}

type clockTrack struct {
	ring     []clockSample // the latest readings, oldest first
	badUntil time.Time     // the node does not count before this
	fault    error         // the latest fault
}

func newClockWatch(n int, factor float64, hold time.Duration) *clockWatch {
	return &clockWatch{factor: factor, hold: hold, nodes: make([]clockTrack, n)}
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
	allowed := local + time.Duration(float64(local)*w.factor) + driftConstant
	if local <= 0 || advanced <= allowed {
		t.ring = append(t.ring, s)
		if len(t.ring) > clockWindow {
			t.ring = t.ring[1:]
		}
		return nil
	}
	mid := s.recv.Sub(old.recv)/2 + s.sent.Sub(old.sent)/2
	err := fmt.Errorf("%w: its clock advanced %v while ours advanced %v (rate %.3f; at most %v allowed, rate %.3f)",
		ErrNodeClock, advanced.Round(time.Millisecond), mid.Round(time.Millisecond),
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

// watchClocks reads every node's clock every cfg.clockEvery until the
// Client closes; Close waits for it (clockWatch.stop). It is not one of the
// Client's operations, so that WaitIdle does not wait for it.
func (c *Client) watchClocks() {
	defer c.clocks.running.Done()
	for {
		t := c.cfg.clock.NewTimer(c.cfg.clockEvery)
		select {
		case <-c.closing:
			t.Stop()
			return
		case <-t.C():
		}
		var wg sync.WaitGroup
		for i := range c.pools {
			wg.Go(func() { c.readClock(i) })
		}
		wg.Wait()
	}
}

// readClock reads node i's clock once, bounded by the node timeout, and
// reports a new fault.
func (c *Client) readClock(i int) {
	ctx, cancel := context.WithTimeout(context.Background(), c.nodeTimeout(0))
	defer cancel()
	sent := c.cfg.clock.Now()
	v, err := c.pools[i].Eval(ctx, scripts.Time, nil)
	recv := c.cfg.clock.Now()
	if err != nil {
		return // a node that does not answer votes for no one anyway
	}
	node, ok := parseTime(v)
	if !ok {
		return
	}
	if fault := c.clocks.add(i, clockSample{sent: sent, recv: recv, node: node}); fault != nil {
		c.emit(ctx, Event{Kind: NodeClockFault, Err: &NodeError{Node: i, Addr: c.pools[i].Addr(), Err: fault}})
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

package wait

import (
	"context"
	"time"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/pool"
)

// Hub is what a Client's waiting calls share: the listeners that hear
// their grants and wake-ups (Grants), the keys its Lock calls recently
// found held (Busy), and the wake-ups of its calls that retry (Released).
// Build it with Init, once, before any call uses it; Close ends it.
type Hub struct {
	Grants   Grants
	Busy     Contended
	Released Releases

	clk     clock.Clock
	closing <-chan struct{}
	stopped func(last, cause error) error
}

// HubConfig is what a Hub is built with.
type HubConfig struct {
	// Channel is the Client's channel (ChannelPrefix and its random id).
	Channel string
	// Notifiers are the nodes' notification APIs, nil for a node without
	// one (its grants are learned by rounds only).
	Notifiers []pool.Notifier
	// Health judges a grant message (nil: every grant counts).
	Health Health
	// Reads reports whether Health reads node i (does I/O: a cluster
	// node's shard; node.Set.HealthReads); such a node's grants are judged
	// off the listener's goroutine. Nil: none does.
	Reads func(i int) bool
	// Timeout bounds each step of the listeners' I/O: the node timeout.
	Timeout time.Duration
	Clock   clock.Clock
	// Closing is closed when the Client closes: a pause ends.
	Closing <-chan struct{}
	// Stopped is the error of a call that retries whose pause was cut: last
	// is its last attempt's error, cause ctx's error or ErrClosed.
	Stopped func(last, cause error) error
}

// Init builds h. It does no I/O: the listeners start with the first wait.
func (h *Hub) Init(cfg HubConfig) {
	h.Grants.channel = cfg.Channel
	h.Grants.notifiers = cfg.Notifiers
	h.Grants.health, h.Grants.reads = cfg.Health, cfg.Reads
	h.Grants.timeout = cfg.Timeout
	h.Grants.woken = &h.Released
	h.clk, h.closing, h.stopped = cfg.Clock, cfg.Closing, cfg.Stopped
}

// Close ends the listeners and waits for their goroutines.
func (h *Hub) Close() { h.Grants.Close() }

// Attempt is one attempt of a call that retries. w registers the Client as
// a watcher of the keys where the attempt is refused; it is nil (nothing to
// register) when no pause follows, and retry says whether one may. It
// returns the error to report and whether the call ends with it (held, ctx
// ended, no retry left, or no retry can succeed).
type Attempt func(ctx context.Context, w *Watch, retry bool) (err error, end bool)

// Retry runs the attempts of a blocking call on keys that does not queue
// (RLock, AcquirePermit, LockAll, an owner's Lock): attempt 1 at once, and
// attempt k+1 s.NextDelay(k) after attempt k (at least MinDelay), or as
// soon as one of keys is released (Released, here or heard by the
// listeners) or a node where attempt k registered deaf listens now
// (watch.go). A nil s makes one attempt, which watches nothing (a Try
// call). timeout bounds each node call: a watcher's lease covers two of
// them past the pause. beat > 0 is for a call that keeps a place in the
// keys' queues (LockAll): a pause longer than beat is cut into beats, and
// each beat but the last ends in an attempt that only keeps that place
// (and may succeed): it is not one of the strategy's retries, nor counted.
// The place's lease (Watch.Queue) then covers a beat, not the retry delay.
// Retry returns how many attempts it made and the error that ended it: an
// attempt's, or Stopped's when ctx ended or the Client closed during a
// pause.
func (h *Hub) Retry(ctx context.Context, keys []string, s Strategy, timeout, beat time.Duration, attempt Attempt) (int, error) {
	if s == nil {
		err, _ := attempt(ctx, nil, false)
		return 1, err
	}
	woken, channels, stop := h.startWatching(keys)
	defer stop()
	for n := 1; ; n++ {
		// Asked before the attempt: an attempt followed by a pause watches
		// for the key's release, for that long.
		delay, retry := s.NextDelay(n)
		var w *Watch
		if retry {
			w = h.Grants.newWatch(channels, delay, beat, timeout)
		}
		err, end := attempt(ctx, w, retry)
		if end {
			return n, err
		}
		for pause := max(delay, MinDelay); ; {
			step := pause
			if beat > 0 && pause > beat {
				step = beat
			}
			full, perr := h.pause(ctx, step, woken, w, err)
			if perr != nil {
				return n, perr
			}
			if !full || step == pause {
				break // woken, or the retry is due
			}
			// A beat: keep the place in the queues for the rest.
			pause -= step
			w = h.Grants.newWatch(channels, pause, beat, timeout)
			if err, end = attempt(ctx, w, true); end {
				return n, err
			}
		}
	}
}

// startWatching prepares a blocked call on keys for wake-ups: the Client
// listens to the nodes (once), and the call is woken by releases of keys
// heard or made here. It returns the wake-up channel, the channels the
// call registers on each node (Grants.Hold: on a cluster node, keys must
// share a slot, as the call's scripts need anyway) and the function that
// stops watching.
func (h *Hub) startWatching(keys []string) (<-chan struct{}, []string, func()) {
	h.Grants.Start()
	channels, release := h.Grants.Hold(keys[0], len(h.Grants.notifiers))
	woken, stop := h.Released.Watch(keys)
	return woken, channels, func() {
		stop()
		release()
	}
}

// pause waits delay (at least MinDelay), or less when woken fires or a
// node where w registered before the Client listened there listens now.
// It reports whether it waited all of delay. When ctx ends or the Client
// closes first, it returns Stopped's error for last, the error of the
// attempt before.
func (h *Hub) pause(ctx context.Context, delay time.Duration, woken <-chan struct{}, w *Watch, last error) (bool, error) {
	t := h.clk.NewTimer(max(delay, MinDelay))
	defer t.Stop()
	deaf := listenFor(h.clk, w)
	defer deaf.stop()
	for {
		select {
		case <-t.C():
			return true, nil
		case <-woken:
			return false, nil
		case <-deaf.C():
			if deaf.caughtUp() {
				return false, nil
			}
		case <-ctx.Done():
			return false, h.stop(last, ctx.Err())
		case <-h.closing:
			return false, h.stop(last, ErrClosed)
		}
	}
}

// stop is the error of a pause cut by cause.
func (h *Hub) stop(last, cause error) error {
	if h.stopped == nil {
		return cause
	}
	return h.stopped(last, cause)
}

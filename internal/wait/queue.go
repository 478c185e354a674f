package wait

import (
	"context"
	"time"
)

// Queue is a Lock call's side of its wait in the nodes' queues: the node
// calls of its rounds (Nodes), and what the call makes of the outcome.
type Queue interface {
	Nodes
	// Hear is given, before the first round, the channel each node's
	// rounds name for the waiter's grants (Grants.Hold).
	Hear(channels []string)
	// Won turns w's grants, valid until until, into the caller's lock (a
	// fence, an extension when little validity is left). On an error the
	// grants are given back and the wait goes on, unless ctx ended.
	Won(ctx context.Context, w *Waiter, until time.Time) error
	// Lost is called when Wait failed with err: it takes w out of every
	// queue, and gives back any key granted to it, in the background, and
	// returns the error the call reports.
	Lost(ctx context.Context, w *Waiter, err error) error
}

// Wait is Lock after its first attempt: w, a new waiter over q for key,
// waits in the nodes' queues until a majority granted it and q.Won made
// the lock, the retry strategy gives up, ctx ends or the Client closes.
// delay and retry are NextDelay(1)'s answer, for the first retry. Grants
// heard for w's token reach it while it waits, and a wait that found key
// held marks it contended (Busy). Wait returns nil once q.Won succeeded;
// otherwise q.Lost's error, or q.Won's when ctx ended after it.
func (h *Hub) Wait(ctx context.Context, w *Waiter, key string, q Queue, delay time.Duration, retry bool) error {
	h.Grants.Register(w, key)
	defer h.Grants.Unregister(w)
	h.Grants.Start()
	channels, release := h.Grants.Hold(key, len(w.view))
	defer release()
	q.Hear(channels)
	for {
		until, err := w.Wait(ctx, h.closing, delay, retry)
		if w.Waited() {
			h.Busy.Mark(key, h.clk.Now())
		}
		if err != nil {
			return q.Lost(ctx, w, err)
		}
		err = q.Won(ctx, w, until)
		if err == nil {
			return nil
		}
		// The grants could not be confirmed: give them back and wait on.
		q.GiveBack(w, w.all())
		w.Restart()
		if ctx.Err() != nil {
			return err
		}
		delay, retry = w.NextDelay()
	}
}

// all returns every node's index.
func (w *Waiter) all() []int {
	out := make([]int, len(w.view))
	for i := range out {
		out[i] = i
	}
	return out
}

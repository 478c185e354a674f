package redlock

import (
	"context"
	"errors"
	"time"
)

// ObserveInterval is how often ObserveLeader reads the leader: a change reaches
// the channel within about this long plus one read (each bounded by the
// node timeout).
const ObserveInterval = 100 * time.Millisecond

// ObserveLeader returns a channel of election's leaders: the current one at once
// (if any), then each change, in term order: a new leader, or a value its
// leader proclaimed (a higher Rev), and the zero Leader when a leadership
// lapses with nobody to take it. It never sends a term lower than one it
// sent, and sends nothing while the nodes cannot tell (no majority
// answers) or while a leader that was just handed the election has not yet
// recorded its value: a Resign with a campaigner waiting goes from one
// leader to the next without a zero Leader between them. It reads the
// nodes every ObserveInterval (Client.Leader).
//
// The channel is unbuffered and owned by ctx: a goroutine sends on it
// until ctx ends or the Client closes, then closes it (within one read of
// the nodes, at most the node timeout). For a nil Client, a nil ctx or an
// election name that Campaign refuses, or after Close, the channel is
// closed at once.
//
// (Observer and WithObserver are telemetry: the Client's events, not an
// election's leader.)
func (c *Client) ObserveLeader(ctx context.Context, election string) <-chan Leader {
	ch := make(chan Leader)
	if _, err := checkElection(election, "", false); ctx == nil || err != nil {
		close(ch)
		return ch
	}
	done, err := c.begin()
	if err != nil {
		close(ch)
		return ch
	}
	o := &observer{c: c, election: election, out: ch}
	go func() {
		defer done()
		defer close(ch)
		o.run(ctx)
	}()
	return ch
}

// observer is the state of one Observe.
type observer struct {
	c        *Client
	election string
	out      chan<- Leader
	last     Leader // the last leader sent (its Term stays after a lapse)
	leading  bool   // the last send was a leader, not the zero Leader
}

// run reads the leader every ObserveInterval and sends each change, until
// ctx ends or the Client closes.
func (o *observer) run(ctx context.Context) {
	clk := o.c.cfg.clock
	for {
		if !o.poll(ctx) {
			return
		}
		t := clk.NewTimer(ObserveInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-o.c.life.closing:
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// poll reads the leader once and sends it if it changed. It returns false
// when the observer must stop.
func (o *observer) poll(ctx context.Context) bool {
	ld, err := o.c.Leader(ctx, o.election)
	switch {
	case err == nil:
		if o.leading && ld.Term == o.last.Term && ld.Rev <= o.last.Rev {
			return true // no change (or an older read of a proclamation)
		}
		if ld.Term < o.last.Term {
			return true // never back in time
		}
		return o.send(ctx, ld, true)
	case errors.Is(err, errNotRecorded):
		return true // a leader is taking over: its record follows
	case errors.Is(err, ErrNoLeader):
		if !o.leading {
			return true
		}
		return o.send(ctx, Leader{}, false)
	case errors.Is(err, ErrClosed):
		return false
	}
	return ctx.Err() == nil // no majority: nothing known, try again
}

// send delivers ld, unless ctx ends or the Client closes first.
func (o *observer) send(ctx context.Context, ld Leader, leading bool) bool {
	select {
	case o.out <- ld:
	case <-ctx.Done():
		return false
	case <-o.c.life.closing:
		return false
	}
	if leading {
		o.last = ld
	}
	o.leading = leading
	return true
}

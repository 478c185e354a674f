package wait

import (
	"errors"
	"time"

	"github.com/redlockgo/redlock/internal/node"
)

// Why a Wait failed, when not for its context: the redlock package reports
// them as ErrNotObtained and ErrClosed, with the nodes' votes.
var (
	// ErrGaveUp means the retry strategy stopped, or a node answered that
	// no round can succeed (Reply.Final).
	ErrGaveUp = errors.New("redlock: gave up waiting")
	// ErrClosed means the closing channel given to Wait was closed.
	ErrClosed = errors.New("redlock: client closed")
)

// Token returns the waiter's token.
func (w *Waiter) Token() string { return w.token }

// Ticket returns the waiter's place in the queues: earlier tickets are
// served first.
func (w *Waiter) Ticket() int64 { return w.ticket }

// TTL returns the TTL the waiter asks for, in whole milliseconds.
func (w *Waiter) TTL() time.Duration { return w.ttl }

// Retries returns how many of the retry strategy's retries the waiter has
// sent: the retries after the first attempt.
func (w *Waiter) Retries() int { return w.retries }

// Waited reports whether a node answered "queued": the key was held.
func (w *Waiter) Waited() bool { return w.waited }

// Reply hands w node r.Node's answer to a round. There is one slot per
// node and at most one round in flight per node, so it never blocks.
func (w *Waiter) Reply(r Reply) { w.replies <- r }

// Silent marks node i as timed out until it answers this waiter: the
// Client's latest call there was cut by the node timeout. Call it before
// Wait.
func (w *Waiter) Silent(i int) { w.view[i].err = node.ErrTimeout }

// Restart forgets the grants of a wait that won but whose lock could not
// be confirmed (a fence, an extension): they are given back, so grants of
// rounds up to now are stale. Wait may then be called again, with the
// delay of NextDelay.
func (w *Waiter) Restart() {
	for i := range w.view {
		w.view[i].granted, w.view[i].floor = false, w.seq+1
	}
}

// NextDelay asks the retry strategy for the next retry's delay.
func (w *Waiter) NextDelay() (time.Duration, bool) { return w.retry.NextDelay(w.retries + 1) }

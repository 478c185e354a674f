package wait

import (
	"context"
	"slices"
	"time"

	"github.com/redlockgo/redlock/clock"
)

// Wait runs the waiter until it holds a majority of grants, the retry
// strategy gives up, ctx ends or closing is closed. Its first round, which
// joins the queues, is part of the caller's first attempt and goes at once;
// retry 1 follows after the delay the caller got from NextDelay(1), when
// retry says so. It returns the end of validity, or the reason it failed:
// ErrGaveUp, ErrClosed, or ctx's error.
func (w *Waiter) Wait(ctx context.Context, closing <-chan struct{}, delay time.Duration, retry bool) (time.Time, error) {
	w.sendRound(everyNode)
	roundT := w.nextRound(delay, retry)
	defer func() { roundT.Stop() }()
	var checkT, deafT clock.Timer
	var checkC, deafC <-chan time.Time
	defer func() {
		if checkT != nil {
			checkT.Stop()
		}
		if deafT != nil {
			deafT.Stop()
		}
	}()
	for {
		if deafC == nil && w.anyDeaf() {
			deafT = w.clk.NewTimer(w.deafPoll)
			deafC = deafT.C()
		}
		w.heard = false
		select {
		case r := <-w.replies:
			w.onReply(r)
			if r.Final {
				w.state = waitFailed // no round can change what the key holds
				return time.Time{}, ErrGaveUp
			}
		case g := <-w.grants:
			w.onGrant(g)
		case <-roundT.C():
			roundT = w.onRoundTimer()
		case <-checkC:
			checkT, checkC = nil, nil
			w.sendRound(everyNode)
		case <-deafC:
			deafT, deafC = nil, nil
			w.onDeafTimer()
		case <-ctx.Done():
			w.state = waitFailed
			return time.Time{}, ctx.Err()
		case <-closing:
			w.state = waitFailed
			return time.Time{}, ErrClosed
		}
		if until, ok := w.valid(); ok {
			w.state = waitWon
			return until, nil
		}
		w.settle()
		w.retake()
		w.sendOwed()
		if w.last && !w.anyBusy() {
			w.state = waitFailed
			return time.Time{}, ErrGaveUp
		}
		if checkC == nil && w.heard && w.Granted() > 0 {
			checkT = w.clk.NewTimer(w.checkAfter())
			checkC = checkT.C()
		}
	}
}

// onRoundTimer sends a round: the strategy's next retry when it is due, to
// every node, else a heartbeat that only keeps the waiter's place (it may
// still take a free key it is first for), to the nodes that are not quiet.
// It returns the timer of the next round.
func (w *Waiter) onRoundTimer() clock.Timer {
	now := w.clk.Now()
	if w.last || now.Before(w.retryAt) {
		w.sendRound(notQuiet)
		if w.last {
			return w.clk.NewTimer(w.heartbeat)
		}
		return w.clk.NewTimer(min(w.retryAt.Sub(now), w.heartbeat))
	}
	w.retries++
	// A retry asks every node, quiet ones included: a key that vanished
	// without a release (an operator's DEL, a holder that shortened its
	// lease and died, the test kit's Expire) announces nothing, and Lock's
	// doc promises that the next retry finds it.
	delay, more := w.retry.NextDelay(w.retries + 1)
	if !more {
		// The strategy's last retry: a node with a round still in flight
		// gets the retry's own round once it answers (sendOwed), so that
		// the wait does not end on an answer from before the retry.
		for i := range w.view {
			w.view[i].owed = w.view[i].busy
		}
	}
	w.sendRound(everyNode)
	return w.nextRound(delay, more)
}

// retake sends a round at once to the nodes where a round sent while the
// waiter yielded found the key free (nodeView.passed), once it may take a
// free key again. Before, the key waited for the next round; and when the
// yielding round was the strategy's last retry, the wait ended on its
// answers, refused as "held by another owner" by nodes whose key had
// expired (behind a 20ms lock that the queues had served to a waiter with
// an earlier ticket, a Lock with one retry: issue 60).
func (w *Waiter) retake() {
	if w.state != waitQueued {
		return
	}
	for _, v := range w.view {
		if v.passed && !v.busy {
			w.sendRound(passedOver)
			return
		}
	}
}

// sendOwed sends the rounds owed to the nodes that were busy when a retry
// was due and have answered since (nodeView.owed), once the waiter has
// settled on what they answered (a yielding waiter's round takes no free
// key). A node granted meanwhile is owed nothing: its grant answers; nor is
// one whose round failed (a silent node's timeout): it said nothing of the
// key, and another round would only hold the wait's end back by a node
// timeout.
func (w *Waiter) sendOwed() {
	owed := false
	for i := range w.view {
		v := &w.view[i]
		if v.owed && !v.busy {
			if v.granted || v.err != nil {
				v.owed = false
			} else {
				owed = true
			}
		}
	}
	if owed {
		w.sendRound(owedRetry)
	}
}

// nextRound returns the timer of the next round: the retry, due delay from
// now, when retry, or the heartbeat if that comes first; without retry, the
// waiter fails once its rounds have answered, and the heartbeat keeps its
// place meanwhile. A delay below MinDelay counts as MinDelay.
func (w *Waiter) nextRound(delay time.Duration, retry bool) clock.Timer {
	if !retry {
		w.last = true
		return w.clk.NewTimer(w.heartbeat)
	}
	delay = max(delay, MinDelay)
	w.retryAt = w.clk.Now().Add(delay)
	return w.clk.NewTimer(min(delay, w.heartbeat))
}

// roundTargets says which of the nodes without a round in flight, and
// without a grant within validity, a round goes to.
type roundTargets int

const (
	everyNode  roundTargets = iota // all of them
	notQuiet                       // those that are not quiet (see quiet)
	caughtUp                       // those deaf at their latest round that listen now
	owedRetry                      // those owed a retry's round (nodeView.owed)
	passedOver                     // those whose yielding round found the key free (nodeView.passed)
)

// sendRound sends a round to the nodes to names.
func (w *Waiter) sendRound(to roundTargets) {
	w.seq++
	now := w.clk.Now()
	w.sent[w.seq] = now
	for s, t := range w.sent {
		if now.Sub(t) > w.ttl {
			delete(w.sent, s) // a grant after it leaves no validity
		}
	}
	mayTake := w.state != waitYielding
	for i := range w.view {
		v := &w.view[i]
		if v.busy || (v.granted && w.live(*v, now)) || w.skips(to, i, now) {
			continue
		}
		v.busy, v.lastSent, v.deaf, v.owed = true, now, !w.nodes.Listening(i), false
		v.yielded, v.passed = !mayTake, false
		w.nodes.Round(w, i, w.seq, mayTake)
	}
}

// skips reports whether node i is not among to at now.
func (w *Waiter) skips(to roundTargets, i int, now time.Time) bool {
	switch to {
	case notQuiet:
		return w.quiet(i, now)
	case caughtUp:
		return !w.view[i].deaf || !w.nodes.Listening(i)
	case owedRetry:
		return !w.view[i].owed
	case passedOver:
		return !w.view[i].passed
	}
	return false
}

// quiet reports whether a round to node i at now would only tell what the
// waiter will hear anyway, so a heartbeat skips it: its last answer found
// the key held with time to live left, our place there was refreshed
// within the heartbeat, and its listener was confirmed when that round
// went, so a release there will be announced. A retry asks quiet nodes too:
// a key that vanished without a release (a DEL, an expiry) announces
// nothing.
func (w *Waiter) quiet(i int, now time.Time) bool {
	v := w.view[i]
	return v.err == nil && !v.granted && w.Granted() == 0 && now.Before(v.heldUntil) &&
		now.Sub(v.lastSent) < w.heartbeat && !v.deaf && w.nodes.Listening(i)
}

// Bounds of the deaf timer. A round sent to a node whose subscription is
// not yet confirmed (a new listener still connecting) leaves a window in
// which a release is announced to nobody: the deaf timer looks, without
// I/O, from MinDeafPoll to MaxDeafPoll apart, for such a node that listens
// now, and sends it a round (onDeafTimer), so a waiter hears of a grant
// within MaxDeafPoll of the confirmation. The redlock package's wake-ups of
// the retrying kinds poll with the same bounds.
const (
	// MinDeafPoll is the deaf timer's first delay.
	MinDeafPoll = 10 * time.Millisecond
	// MaxDeafPoll is the deaf timer's longest delay.
	MaxDeafPoll = 250 * time.Millisecond
)

// anyDeaf reports whether a node was not listening at its latest round.
func (w *Waiter) anyDeaf() bool {
	for _, v := range w.view {
		if v.deaf {
			return true
		}
	}
	return false
}

// onDeafTimer sends a round, at once, to the nodes that were not listening
// at their latest round and listen now: a grant made between the two was
// announced to nobody. A node still not listening (a Pool without
// notifications, a listener that cannot connect) costs no I/O here; its
// rounds come at the heartbeat.
func (w *Waiter) onDeafTimer() {
	for i, v := range w.view {
		if v.deaf && !v.busy && w.nodes.Listening(i) {
			w.sendRound(caughtUp)
			w.deafPoll = MinDeafPoll
			return
		}
	}
	w.deafPoll = min(2*w.deafPoll, MaxDeafPoll)
}

// checkAfter is the delay of the check timer: three of the majority's
// round trips (quorumRTT), at least 1ms and at most check. The other
// grants of a release normally follow the first within a round trip;
// waiting longer only prolongs a split (the nodes answer the check at
// once).
func (w *Waiter) checkAfter() time.Duration {
	rtt := w.quorumRTT()
	if rtt == 0 {
		return w.check
	}
	return min(w.check, max(3*rtt, time.Millisecond))
}

// quorumRTT is the round trip within which a majority of the nodes answer
// this waiter: the quorum-th shortest of the nodes' slowest answers so far
// or, until a majority has answered, the slowest answer (0: none yet). A
// slow minority does not lengthen it: a majority's grants and answers are
// what end a wait or a split, and a slow node's round still in flight
// after checkAfter counts as failing (failing).
func (w *Waiter) quorumRTT() time.Duration {
	var rtts []time.Duration
	for _, v := range w.view {
		if v.rtt > 0 {
			rtts = append(rtts, v.rtt)
		}
	}
	if len(rtts) == 0 {
		return 0
	}
	slices.Sort(rtts)
	return rtts[min(w.quorum, len(rtts))-1]
}

package wait

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redlockgo/redlock/internal/fanout"
	"github.com/redlockgo/redlock/internal/scripts"
)

// onReply records a node's answer to a round.
func (w *Waiter) onReply(r Reply) {
	v := &w.view[r.Node]
	v.busy, v.passed = false, false
	v.err = r.Err
	if r.Err != nil {
		return
	}
	v.rtt = max(v.rtt, w.clk.Now().Sub(v.lastSent))
	if r.Code != scripts.EnqueueQueued && grantSeq(r) < v.floor {
		// Granted before we gave it back: our give-back may still be on its
		// way there and delete the key under us, even when this round came
		// after it (a grant is judged by the round it followed, as onGrant
		// does, never by the round that found it).
		return
	}
	switch r.Code {
	case scripts.EnqueueSet:
		v.granted, v.seq, v.delayed, w.grantMark, w.heard = true, r.Seq, false, w.seq, true
	case scripts.EnqueueGranted:
		v.granted, v.seq, v.delayed, w.grantMark, w.heard = true, r.GrantSeq, false, w.seq, true
	default:
		w.waited = true
		if v.granted && v.seq >= r.Seq {
			return // a grant that followed this round, heard first
		}
		v.granted, v.queued, v.holder, v.delayed = false, r.Seq, r.Holder, r.Delayed
		v.passed = v.yielded && r.HolderTTL == 0 && !r.Delayed // free, and left for us
		v.heldUntil = time.Time{}
		if r.HolderTTL > 0 {
			v.heldUntil = w.clk.Now().Add(r.HolderTTL)
		}
	}
}

// grantSeq is the round after which r's node gave us the key: the round
// itself when it took the key, the one the grant names when the key held
// our token already (0, older than any give-back, when the node does not
// know).
func grantSeq(r Reply) int {
	if r.Code == scripts.EnqueueGranted {
		return r.GrantSeq
	}
	return r.Seq
}

// onGrant records a release message naming us.
func (w *Waiter) onGrant(g Grant) {
	v := &w.view[g.Node]
	if g.Seq < v.queued || g.Seq < v.floor {
		return // a grant from before a round that found us queued, or given back: gone since
	}
	if g.Err != nil {
		v.granted, v.err = false, g.Err // ours there, but it votes for nobody
		return
	}
	v.granted, v.seq, v.err, w.grantMark, w.heard = true, g.Seq, nil, w.seq, true
}

// valid returns the end of validity if a majority granted us within it. A
// node grants after it ran one of our rounds (seq), sent at sent[seq], so
// its key lives at least until sent[seq]+ttl on its clock, as if we had
// sent SET NX then: validity ends at the quorum-th latest of those send
// times, plus ttl, less the drift (docs/safety.md).
func (w *Waiter) valid() (time.Time, bool) {
	now := w.clk.Now()
	var bases []time.Time
	for _, v := range w.view {
		if !v.granted {
			continue
		}
		if w.live(v, now) {
			bases = append(bases, w.sent[v.seq])
		}
	}
	if len(bases) < w.quorum {
		return time.Time{}, false
	}
	slices.SortFunc(bases, func(a, b time.Time) int { return b.Compare(a) })
	return w.end(bases[w.quorum-1]), true
}

// live reports whether v's grant still leaves validity at now.
func (w *Waiter) live(v nodeView, now time.Time) bool {
	t, ok := w.sent[v.seq]
	return v.granted && ok && now.Before(w.end(t))
}

// end is the end of validity of a grant that followed a round sent at t.
func (w *Waiter) end(t time.Time) time.Time { return t.Add(w.ttl - w.drift) }

// settle moves between queued and yielding (see the table on Waiter). A
// waiter yields when the nodes held by earlier waiters leave it too few for
// a majority; nodes that failed its latest round count as lost too while an
// earlier waiter holds any node, so that a split with a silent node in it
// ends at once: the earliest waiter never yields, and gets what the others
// give back.
func (w *Waiter) settle() {
	earlier := w.earlierHeld()
	if earlier > 0 {
		earlier += w.failing()
	}
	if earlier <= len(w.view)-w.quorum {
		w.state = waitQueued
		return
	}
	var mine []int
	for i := range w.view {
		if v := &w.view[i]; v.granted {
			mine = append(mine, i)
			v.granted, v.floor, v.heldUntil = false, w.seq+1, time.Time{}
		}
	}
	w.state = waitYielding
	if len(mine) > 0 {
		// Giving a key back takes us out of that node's queue: rejoin at
		// once (ordered after the give-back), not at the next retry, and
		// not skipped as quiet, or the next releases there pass us by.
		w.nodes.GiveBack(w, mine)
		w.sendRound(everyNode)
	}
}

// earlierHeld counts the nodes held, as far as we know, by waiters the
// queues served with an earlier ticket than ours. Only answers to rounds
// sent after our latest grant count: an older one may name a holder that
// has released since. When more than n-quorum nodes are so held, we cannot
// complete a majority before those waiters are done: they should.
func (w *Waiter) earlierHeld() int {
	n := 0
	for _, v := range w.view {
		if v.granted || v.holder == "" || v.queued <= w.grantMark {
			continue
		}
		if w.after(v.holder) {
			n++
		}
	}
	return n
}

// after reports whether we come after holder ("ticket token") in the
// queues. Tickets are arrival times in microseconds, and two waiters can
// draw the same one (eight Clients of one process, waiting at once on a
// loaded machine): the queues, sorted sets, order equal tickets by token,
// bytewise, and so does this. Without the tie broken, two waiters with one
// ticket split 2-2 beside a silent fifth node each saw the other as no
// earlier, neither gave way, and every wait on the key lasted its TTL.
func (w *Waiter) after(holder string) bool {
	ticket, token, _ := strings.Cut(holder, " ")
	t, err := strconv.ParseFloat(ticket, 64)
	if err != nil {
		return false
	}
	mine := float64(w.ticket)
	return t < mine || (t == mine && token != "" && token < w.token)
}

// failing counts the nodes that cannot grant us anything for now: their
// latest round failed, or the one in flight has gone unanswered longer
// than checkAfter (a node that just went silent is not yet timed out).
func (w *Waiter) failing() int {
	n, now, late := 0, w.clk.Now(), w.checkAfter()
	for _, v := range w.view {
		if !v.granted && (v.err != nil || (v.busy && now.Sub(v.lastSent) >= late)) {
			n++
		}
	}
	return n
}

// Granted counts the nodes that granted the waiter the key.
func (w *Waiter) Granted() int {
	n := 0
	for _, v := range w.view {
		if v.granted {
			n++
		}
	}
	return n
}

func (w *Waiter) anyBusy() bool {
	for _, v := range w.view {
		if v.busy {
			return true
		}
	}
	return false
}

// Result describes what the waiter saw, as the votes of one attempt, for
// the error of a wait that failed.
func (w *Waiter) Result() fanout.Result {
	var res fanout.Result
	now := w.clk.Now()
	for i, v := range w.view {
		if v.busy && v.err == nil && !v.granted && v.queued == 0 {
			continue // no answer yet: not listed, as a straggler
		}
		err := v.err
		if err == nil && !v.granted && v.delayed {
			err = w.delayed(max(v.heldUntil.Sub(now), 0))
		}
		res.Votes = append(res.Votes, fanout.Vote{Node: i, OK: v.granted, Err: err})
		if v.granted {
			res.Yes++
		}
	}
	return res
}

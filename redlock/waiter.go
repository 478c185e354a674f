package redlock

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/internal/fanout"
	"github.com/redlockgo/redlock/internal/scripts"
)

// A waiter is one Lock call waiting in the nodes' queues (enqueue.lua,
// release.lua). It does not try to take the lock over and over: it joins
// the queue kept next to the key on every node, and a release on a node sets
// the key at once to the token of the first waiter there and tells it. The
// waiter counts these grants; once a majority of nodes granted it within
// validity, it holds the lock.
//
// Validity. A node grants a waiter after it processed one of the waiter's
// rounds, and names that round (seq) in the grant. The round was sent at
// sent[seq], before the node ran it, so the node's key lives at least until
// sent[seq]+ttl on the node's clock, exactly as if the waiter had sent SET NX
// at that moment. The waiter's lock is valid until the quorum-th latest of
// those send times, plus ttl, less the drift allowance. The argument is in
// docs/safety.md.
//
// States (waitState), with the event that moves the waiter and what it does:
//
//	state     event                                       next      action
//	queued    grants valid on a majority                   won       return the validity
//	queued    grants on a minority, and too few nodes left yielding  give the grants back (release.lua
//	          beside those held by earlier tickets (settle)          passes each to the next waiter)
//	yielding  a round sees no earlier holder any more       queued    take a free key again
//	queued,   round timer (retry strategy, lease refresh)  same      send a round to every idle node
//	yielding                                                         that is not quiet (below)
//	          grant on a minority                           same      arm the check timer (checkAfter)
//	          check timer                                   same      send a round to idle, ungranted nodes
//	          deaf timer, and a node that was not listening  same      send a round to the idle nodes
//	          at its latest round listens now                         that did so (caughtUp)
//	          retries exhausted and no round in flight      failed    return the last error
//	          a node says the key holds another kind         failed    return at once (ErrWrongKind)
//	          ctx ended, or the Client closed               failed    return at once
//
// Quiet nodes. A retry round asks a node what the waiter would hear of
// anyway. It is not sent to a node that is quiet: its last answer found the
// key held, with time to live left, the waiter's place there was refreshed
// within the heartbeat, and the Client's listener on the node has its
// subscription confirmed, so a release there will be announced, and had it
// already when that round went. The retry still counts. A waiter that
// holds grants on a minority asks every node at each retry all the same:
// the split it is in is resolved only by what the rounds tell of the other
// holders (see settle), and nothing is announced while each waits for the
// other. Rounds on a busy key stay about one per holder's TTL and per
// heartbeat instead of one per backoff step; a holder that vanishes is
// noticed when its key expires, as before, and a lost announcement costs at
// most a heartbeat.
//
// Deaf nodes. A round that goes while the node's subscription is not yet
// confirmed (a new Client's listener still connecting, a sharded channel
// still being placed on its shard) leaves a window: a release before the
// confirmation is announced to nobody. The deaf timer looks, without I/O,
// at growing intervals (minDeafPoll to maxDeafPoll), for such a node that
// listens now, and then sends a round at once, which finds any grant made
// in the window: a waiter hears of it within maxDeafPoll of the
// confirmation instead of at the heartbeat.
//
// The caller gives back whatever the waiter may hold on failure (the
// waiter's token leaves every queue and every key it was granted).
type waiter struct {
	nodes  queueNodes
	clk    clock.Clock
	token  string
	ticket int64
	ttl    time.Duration
	drift  time.Duration
	quorum int
	retry  RetryStrategy
	// heartbeat bounds the time between rounds: each round refreshes the
	// waiter's lease in the queues, and keeps sent[] recent enough that a
	// grant leaves most of the TTL as validity.
	heartbeat time.Duration
	// check bounds how long a waiter granted by a minority waits for the
	// other grants before asking the nodes that have not granted it: a
	// message may be lost, a silent node announces nothing, and in a split
	// only rounds tell who holds the other nodes. A quarter of the node
	// timeout, at most 50ms; checkAfter shortens it to a few of the
	// majority's round trips once it has measured them.
	check time.Duration
	// deafPoll is the deaf timer's next delay (see Deaf nodes).
	deafPoll time.Duration

	replies chan reply // one slot per node: at most one round in flight per node
	grants  chan grant // dropped when full: the next round learns the same

	state   waitState
	view    []nodeView
	seq     int
	sent    map[int]time.Time // send time of each round still useful
	retries int               // the retry strategy's rounds sent: the retries after the first attempt
	// retryAt is when the strategy's next retry is due; the round timer
	// fires sooner only to keep the waiter's place (the heartbeat), and such
	// a round is not a retry.
	retryAt time.Time
	// grantMark is the latest round sent when we last heard of a grant:
	// only answers to later rounds tell who holds a node now.
	grantMark int
	heard     bool // the last event was news of a grant
	waited    bool // a node answered "queued": the key was held
	last      bool // the retry strategy said stop: fail once the last round is in
}

// waitState names where a waiter is; see the table on waiter.
type waitState int

const (
	waitQueued waitState = iota
	waitYielding
	waitWon
	waitFailed
)

func (s waitState) String() string {
	return [...]string{"queued", "yielding", "won", "failed"}[s]
}

// queueNodes is what a waiter needs of the nodes. Both calls return at once
// and do their I/O in the background, each node call bounded by the node
// timeout; round delivers its reply on w.replies.
type queueNodes interface {
	// round sends round seq of w to node i: join or refresh the queue, and
	// take the key if it is free, w is first, and mayTake.
	round(w *waiter, i, seq int, mayTake bool)
	// giveBack releases w's token on nodes: it leaves their queues, and a
	// key granted to it passes to the next waiter.
	giveBack(w *waiter, nodes []int)
	// listening reports whether a grant by node i would be announced to
	// w now. It never blocks on I/O.
	listening(i int) bool
}

// nodeView is what a waiter knows of one node.
type nodeView struct {
	busy    bool // a round is in flight
	granted bool // the key holds our token
	seq     int  // granted: the round the grant followed (0: unknown)
	queued  int  // the latest round the node answered with "queued"
	floor   int  // grants following a round before it are stale: we gave them back
	holder  string
	// heldUntil is when the key, found held by the latest "queued"
	// answer, runs out unless extended (zero: unknown).
	heldUntil time.Time
	lastSent  time.Time // when the latest round went to the node
	delayed   bool      // the latest "queued" answer found the key in its lock-delay, until heldUntil
	err       error     // the latest round's error, nil once answered
	// deaf: the node's subscription was not confirmed when the latest
	// round went, so a grant since may have gone unannounced.
	deaf bool
	// rtt is the node's slowest answer to one of our rounds so far.
	rtt time.Duration
}

// reply is a node's answer to a round.
type reply struct {
	node int
	seq  int   // the round answered
	code int64 // scripts.Enqueue*
	// grantSeq is the round a grant followed (code EnqueueGranted).
	grantSeq int
	// holder is the ticket of the waiter the queue gave the key to, when
	// queued behind it.
	holder string
	// holderTTL is the key's time to live when queued (0: free or unknown),
	// or what is left of its lock-delay when delayed.
	holderTTL time.Duration
	delayed   bool // the key is free but in its lock-delay (WithLockDelay)
	err       error
}

// grant is a release message: node handed us the key after our round seq.
// A non-nil err is why the grant does not count (the node's health).
type grant struct {
	node, seq int
	err       error
}

func newWaiter(nodes queueNodes, clk clock.Clock, n, quorum int, token string, ttl, drift time.Duration, retry RetryStrategy, nodeTimeout time.Duration) *waiter {
	lease := max(ttl, time.Second)
	return &waiter{
		nodes:     nodes,
		clk:       clk,
		token:     token,
		ticket:    clk.Now().UnixMicro(),
		ttl:       ttl,
		drift:     drift,
		quorum:    quorum,
		retry:     retry,
		heartbeat: max(min(lease/3, ttl/3), time.Millisecond),
		check:     contendedGrace(nodeTimeout),
		deafPoll:  minDeafPoll,
		replies:   make(chan reply, n),
		grants:    make(chan grant, 2*n),
		view:      make([]nodeView, n),
		sent:      make(map[int]time.Time),
	}
}

// lease is how long a waiter's entry stays in a queue without a refresh.
func (w *waiter) lease() time.Duration { return max(w.ttl, time.Second) }

// deliver hands w a grant heard from a node. It never blocks.
func (w *waiter) deliver(g grant) {
	select {
	case w.grants <- g:
	default:
	}
}

// wait runs the waiter until it holds a majority of grants, the retry
// strategy gives up, ctx ends or closing is closed. Its first round, which
// joins the queues, is part of the caller's first attempt and goes at once;
// retry 1 follows after the delay the caller got from NextDelay(1), when
// retry says so. It returns the end of validity, or the reason it failed.
func (w *waiter) wait(ctx context.Context, closing <-chan struct{}, delay time.Duration, retry bool) (time.Time, error) {
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
			if errors.Is(r.err, ErrWrongKind) {
				w.state = waitFailed // no round can change what the key holds
				return time.Time{}, ErrNotObtained
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
		if w.last && !w.anyBusy() {
			w.state = waitFailed
			return time.Time{}, ErrNotObtained
		}
		if checkC == nil && w.heard && w.granted() > 0 {
			checkT = w.clk.NewTimer(w.checkAfter())
			checkC = checkT.C()
		}
	}
}

// onRoundTimer sends a round: the strategy's next retry when it is due,
// else a heartbeat that only keeps the waiter's place (it may still take
// a free key it is first for). It returns the timer of the next round.
func (w *waiter) onRoundTimer() clock.Timer {
	now := w.clk.Now()
	if w.last || now.Before(w.retryAt) {
		w.sendRound(notQuiet)
		if w.last {
			return w.clk.NewTimer(w.heartbeat)
		}
		return w.clk.NewTimer(min(w.retryAt.Sub(now), w.heartbeat))
	}
	w.retries++
	w.sendRound(notQuiet)
	return w.nextRound(w.retry.NextDelay(w.retries + 1))
}

// nextRound returns the timer of the next round: the retry, due delay from
// now, when retry, or the heartbeat if that comes first; without retry, the
// waiter fails once its rounds have answered, and the heartbeat keeps its
// place meanwhile. A delay below minRetryDelay counts as minRetryDelay.
func (w *waiter) nextRound(delay time.Duration, retry bool) clock.Timer {
	if !retry {
		w.last = true
		return w.clk.NewTimer(w.heartbeat)
	}
	delay = max(delay, minRetryDelay)
	w.retryAt = w.clk.Now().Add(delay)
	return w.clk.NewTimer(min(delay, w.heartbeat))
}

// roundTargets says which of the nodes without a round in flight, and
// without a grant within validity, a round goes to.
type roundTargets int

const (
	everyNode roundTargets = iota // all of them
	notQuiet                      // those that are not quiet (see waiter)
	caughtUp                      // those deaf at their latest round that listen now
)

// sendRound sends a round to the nodes to names.
func (w *waiter) sendRound(to roundTargets) {
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
		v.busy, v.lastSent, v.deaf = true, now, !w.nodes.listening(i)
		w.nodes.round(w, i, w.seq, mayTake)
	}
}

// skips reports whether node i is not among to at now.
func (w *waiter) skips(to roundTargets, i int, now time.Time) bool {
	switch to {
	case notQuiet:
		return w.quiet(i, now)
	case caughtUp:
		return !w.view[i].deaf || !w.nodes.listening(i)
	}
	return false
}

// quiet reports whether a round to node i at now would only tell what the
// waiter will hear anyway (see waiter).
func (w *waiter) quiet(i int, now time.Time) bool {
	v := w.view[i]
	return v.err == nil && !v.granted && w.granted() == 0 && now.Before(v.heldUntil) &&
		now.Sub(v.lastSent) < w.heartbeat && !v.deaf && w.nodes.listening(i)
}

// Bounds of the deaf timer (see Deaf nodes): a node's subscription
// confirmed after its round is noticed within maxDeafPoll.
const (
	minDeafPoll = 10 * time.Millisecond
	maxDeafPoll = 250 * time.Millisecond
)

// anyDeaf reports whether a node was not listening at its latest round.
func (w *waiter) anyDeaf() bool {
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
func (w *waiter) onDeafTimer() {
	for i, v := range w.view {
		if v.deaf && !v.busy && w.nodes.listening(i) {
			w.sendRound(caughtUp)
			w.deafPoll = minDeafPoll
			return
		}
	}
	w.deafPoll = min(2*w.deafPoll, maxDeafPoll)
}

// checkAfter is the delay of the check timer: three of the majority's
// round trips (quorumRTT), at least 1ms and at most check. The other
// grants of a release normally follow the first within a round trip;
// waiting longer only prolongs a split (the nodes answer the check at
// once).
func (w *waiter) checkAfter() time.Duration {
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
func (w *waiter) quorumRTT() time.Duration {
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

// onReply records a node's answer to a round.
func (w *waiter) onReply(r reply) {
	v := &w.view[r.node]
	v.busy = false
	v.err = r.err
	if r.err != nil {
		return
	}
	v.rtt = max(v.rtt, w.clk.Now().Sub(v.lastSent))
	if r.code != scripts.EnqueueQueued && r.seq < v.floor {
		return // granted before we gave it back
	}
	switch r.code {
	case scripts.EnqueueSet:
		v.granted, v.seq, v.delayed, w.grantMark, w.heard = true, r.seq, false, w.seq, true
	case scripts.EnqueueGranted:
		v.granted, v.seq, v.delayed, w.grantMark, w.heard = true, r.grantSeq, false, w.seq, true
	default:
		w.waited = true
		if v.granted && v.seq >= r.seq {
			return // a grant that followed this round, heard first
		}
		v.granted, v.queued, v.holder, v.delayed = false, r.seq, r.holder, r.delayed
		v.heldUntil = time.Time{}
		if r.holderTTL > 0 {
			v.heldUntil = w.clk.Now().Add(r.holderTTL)
		}
	}
}

// onGrant records a release message naming us.
func (w *waiter) onGrant(g grant) {
	v := &w.view[g.node]
	if g.seq < v.queued || g.seq < v.floor {
		return // a grant from before a round that found us queued, or given back: gone since
	}
	if g.err != nil {
		v.granted, v.err = false, g.err // ours there, but it votes for nobody
		return
	}
	v.granted, v.seq, v.err, w.grantMark, w.heard = true, g.seq, nil, w.seq, true
}

// valid returns the end of validity if a majority granted us within it.
func (w *waiter) valid() (time.Time, bool) {
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
func (w *waiter) live(v nodeView, now time.Time) bool {
	t, ok := w.sent[v.seq]
	return v.granted && ok && now.Before(w.end(t))
}

// end is the end of validity of a grant that followed a round sent at t.
func (w *waiter) end(t time.Time) time.Time { return t.Add(w.ttl - w.drift) }

// settle moves between queued and yielding (see the table on waiter). A
// waiter yields when the nodes held by earlier waiters leave it too few for
// a majority; nodes that failed its latest round count as lost too while an
// earlier waiter holds any node, so that a split with a silent node in it
// ends at once: the earliest waiter never yields, and gets what the others
// give back.
func (w *waiter) settle() {
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
		w.nodes.giveBack(w, mine)
		w.sendRound(everyNode)
	}
}

// earlierHeld counts the nodes held, as far as we know, by waiters the
// queues served with an earlier ticket than ours. Only answers to rounds
// sent after our latest grant count: an older one may name a holder that
// has released since. When more than n-quorum nodes are so held, we cannot
// complete a majority before those waiters are done: they should.
func (w *waiter) earlierHeld() int {
	n := 0
	for _, v := range w.view {
		if v.granted || v.holder == "" || v.queued <= w.grantMark {
			continue
		}
		if t, err := strconv.ParseFloat(v.holder, 64); err == nil && t < float64(w.ticket) {
			n++
		}
	}
	return n
}

// failing counts the nodes that cannot grant us anything for now: their
// latest round failed, or the one in flight has gone unanswered longer
// than checkAfter (a node that just went silent is not yet timed out).
func (w *waiter) failing() int {
	n, now, late := 0, w.clk.Now(), w.checkAfter()
	for _, v := range w.view {
		if !v.granted && (v.err != nil || (v.busy && now.Sub(v.lastSent) >= late)) {
			n++
		}
	}
	return n
}

func (w *waiter) granted() int {
	n := 0
	for _, v := range w.view {
		if v.granted {
			n++
		}
	}
	return n
}

func (w *waiter) anyBusy() bool {
	for _, v := range w.view {
		if v.busy {
			return true
		}
	}
	return false
}

// result describes what the waiter saw, as the votes of one attempt, for
// the error of a wait that failed.
func (w *waiter) result() fanout.Result {
	var res fanout.Result
	now := w.clk.Now()
	for i, v := range w.view {
		if v.busy && v.err == nil && !v.granted && v.queued == 0 {
			continue // no answer yet: not listed, as a straggler
		}
		err := v.err
		if err == nil && !v.granted && v.delayed {
			err = delayError(max(v.heldUntil.Sub(now), 0))
		}
		res.Votes = append(res.Votes, fanout.Vote{Node: i, OK: v.granted, Err: err})
		if v.granted {
			res.Yes++
		}
	}
	return res
}

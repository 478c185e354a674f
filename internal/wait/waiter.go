package wait

import (
	"time"

	"github.com/redlockgo/redlock/clock"
)

// A Waiter is one Lock call waiting in the nodes' queues (enqueue.lua,
// release.lua): it joins the queue kept next to the key on every node, a
// release there sets the key to the first waiter's token and tells it, and
// once a majority of nodes granted it within validity (valid) it holds the
// lock. On failure the caller gives back whatever it may hold.
//
// States (waitState; "waiting" is queued or yielding), with the event that
// moves the waiter and what it does:
//
//	state     event                                    next      action
//	queued    grants valid on a majority                won       return the validity
//	queued    grants on a minority, too few nodes left  yielding  give the grants back (settle)
//	yielding  a round sees no earlier holder any more   queued    take a free key at once (retake)
//	waiting   round timer (retry, heartbeat)            same      round to idle nodes not quiet
//	waiting   a node busy at the last retry answers     same      send it the retry's round (sendOwed)
//	waiting   grant on a minority; then check timer     same      round to idle, ungranted nodes
//	waiting   deaf timer, a deaf node listens now       same      round to those nodes (onDeafTimer)
//	waiting   retries exhausted, no round in flight     failed    return the last error
//	waiting   the key holds another kind (Reply.Final)  failed    return at once
//	waiting   ctx ended, or the Client closed           failed    return at once
type Waiter struct {
	nodes  Nodes
	clk    clock.Clock
	token  string
	ticket int64
	ttl    time.Duration
	drift  time.Duration
	quorum int
	retry  Strategy
	// delayed builds a lock-delay's per-node error (Config.Delayed).
	delayed func(left time.Duration) error
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
	// deafPoll is the deaf timer's next delay (see MinDeafPoll).
	deafPoll time.Duration

	replies chan Reply // one slot per node: at most one round in flight per node
	grants  chan Grant // dropped when full: the next round learns the same

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

// waitState names where a waiter is; see the table on Waiter.
type waitState int

const (
	waitQueued waitState = iota
	waitYielding
	waitWon
	waitFailed
)

// String names the state as the table on Waiter does.
func (s waitState) String() string {
	return [...]string{"queued", "yielding", "won", "failed"}[s]
}

// Nodes is what a Waiter needs of the nodes: the engine side of its
// rounds. Round and GiveBack return at once and do their I/O in the
// background, each node call bounded by the node timeout; Round delivers
// its reply with Waiter.Reply.
type Nodes interface {
	// Round sends round seq of w to node i: join or refresh the queue, and
	// take the key if it is free, w is first, and mayTake.
	Round(w *Waiter, i, seq int, mayTake bool)
	// GiveBack releases w's token on nodes: it leaves their queues, and a
	// key granted to it passes to the next waiter.
	GiveBack(w *Waiter, nodes []int)
	// Listening reports whether a grant by node i would be announced to
	// w now. It never blocks on I/O.
	Listening(i int) bool
}

// nodeView is what a waiter knows of one node.
type nodeView struct {
	busy    bool // a round is in flight
	owed    bool // busy when the last retry was due: the retry's round goes once it answers
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
	// yielded: the latest round went while the waiter was yielding, so it
	// could not take a free key; passed: its answer found the key free.
	// A passed node gets a round that may take as soon as the waiter does
	// not yield any more (retake).
	yielded, passed bool
	// rtt is the node's slowest answer to one of our rounds so far.
	rtt time.Duration
}

// Reply is a node's answer to a round.
type Reply struct {
	Node int
	Seq  int   // the round answered
	Code int64 // scripts.Enqueue*
	// GrantSeq is the round a grant followed (code EnqueueGranted).
	GrantSeq int
	// Holder is "ticket token" of the waiter the queue gave the key to,
	// when queued behind it (a bare ticket is read too).
	Holder string
	// HolderTTL is the key's time to live when queued (0: free or unknown),
	// or what is left of its lock-delay when Delayed.
	HolderTTL time.Duration
	Delayed   bool // the key is free but in its lock-delay (WithLockDelay)
	Err       error
	// Final says that no round can change Err (the key holds another
	// kind): the Waiter fails at once.
	Final bool
}

// Grant is a release message: Node handed us the key after our round Seq.
// A non-nil Err is why the grant does not count (the node's health).
type Grant struct {
	Node, Seq int
	Err       error
}

// Config is what a Waiter is built with.
type Config struct {
	Clock  clock.Clock
	N      int    // the number of nodes
	Quorum int    // how many grants make the lock
	Token  string // the waiter's token, new for each wait
	TTL    time.Duration
	Drift  time.Duration // the drift allowance of TTL
	Retry  Strategy
	// Check bounds how long a waiter granted by a minority waits for the
	// other grants before asking again (see Waiter.check): the engine's
	// contended grace.
	Check time.Duration
	// Delayed is the per-node error of a key found in its lock-delay, with
	// left to run, for Result.
	Delayed func(left time.Duration) error
}

// New returns a Waiter over nodes, which has sent nothing yet.
func New(nodes Nodes, cfg Config) *Waiter {
	lease := max(cfg.TTL, time.Second)
	return &Waiter{
		nodes:     nodes,
		clk:       cfg.Clock,
		token:     cfg.Token,
		ticket:    cfg.Clock.Now().UnixMicro(),
		ttl:       cfg.TTL,
		drift:     cfg.Drift,
		quorum:    cfg.Quorum,
		retry:     cfg.Retry,
		delayed:   cfg.Delayed,
		heartbeat: max(min(lease/3, cfg.TTL/3), time.Millisecond),
		check:     cfg.Check,
		deafPoll:  MinDeafPoll,
		replies:   make(chan Reply, cfg.N),
		grants:    make(chan Grant, 2*cfg.N),
		view:      make([]nodeView, cfg.N),
		sent:      make(map[int]time.Time),
	}
}

// Lease is how long a waiter's entry stays in a queue without a refresh.
func (w *Waiter) Lease() time.Duration { return max(w.ttl, time.Second) }

// Deliver hands w a grant heard from a node. It never blocks.
func (w *Waiter) Deliver(g Grant) {
	select {
	case w.grants <- g:
	default:
	}
}

package redlock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redlockgo/redlock/internal/fanout"
	"github.com/redlockgo/redlock/internal/lease"
	"github.com/redlockgo/redlock/internal/node"
	"github.com/redlockgo/redlock/internal/wait"
)

// Sentinel errors, for errors.Is. Errors returned by this package wrap them;
// they are never returned bare when per-node detail exists.
var (
	// ErrNotObtained means Lock or TryLock did not get the lock: a majority
	// refused, could not be reached in time, or no validity was left.
	// IsContended and IsUnavailable tell which.
	ErrNotObtained = errors.New("redlock: lock not obtained")
	// ErrNotHeld means the lock is no longer ours: its validity ran out, or a
	// majority of nodes no longer hold our token.
	ErrNotHeld = errors.New("redlock: lock not held")
	// ErrNotExtended means Extend did not reach a majority although the lock
	// may still be valid until Until(); nodes did not answer in time.
	ErrNotExtended = errors.New("redlock: lock not extended")
	// ErrNotReleased means Unlock did not reach a majority; the copies left on
	// the nodes expire by their TTL.
	ErrNotReleased = errors.New("redlock: lock not released")
	// ErrTaken is the per-node cause when a node holds the key for another
	// owner.
	ErrTaken = errors.New("redlock: held by another owner")
	// ErrClosed means the Client was closed.
	ErrClosed = errors.New("redlock: client closed")
	// ErrNodeTimeout is the per-node cause when a node did not answer within
	// the node timeout (WithNodeTimeout). It does not match
	// context.DeadlineExceeded: an operation's error matches that only when
	// the caller's own context ended the call.
	ErrNodeTimeout = node.ErrTimeout
	// ErrPending is the per-node cause when a node had not answered yet when
	// the operation decided without it (a majority had already refused, or
	// agreed too late). Its outcome is unknown; the Client cleans up after
	// it when it answers.
	ErrPending = errors.New("redlock: no answer before the decision")
	// ErrNodeQuarantined is the per-node cause when a node said yes but
	// restarted less than the quarantine ago without persisting every
	// write (WithQuarantine): it may have forgotten a lock that is still
	// valid, so its yes does not count.
	ErrNodeQuarantined = node.ErrQuarantined
	// ErrNodeUnverified is the cause reported (in a NodeUnverified event,
	// never in an operation's error) for a node whose age the Client
	// cannot read, so that it cannot quarantine it: the node counts.
	ErrNodeUnverified = node.ErrUnverified
	// ErrNodeClock is the per-node cause when a node said yes but its
	// clock was seen running fast or jumping forward beyond the drift
	// allowance (WithClockCheck): it may expire keys early.
	ErrNodeClock = node.ErrClock
	// ErrNodeSameServer is the per-node cause when a node said yes but
	// another node of the Client is the same Redis server under another
	// address (127.0.0.1 and localhost, a DNS name and its IP, a proxy):
	// both pools learned the same run_id. A server's yes must count once,
	// so neither node counts while both lead to it; the error names both
	// addresses and the run. A NodeSameServer event reports it.
	ErrNodeSameServer = node.ErrSameServer
	// ErrLockDelay is the per-node cause when a node refused a key whose
	// last holder's lock expired without a release less than the lock-delay
	// ago (WithLockDelay). The node set nothing; the NodeError names the
	// time left.
	ErrLockDelay = lease.ErrLockDelay
	// ErrWrongKind is the per-node cause when the key holds another kind of
	// lock than the call takes: permits (a semaphore) where a lock, reader
	// or multi-lock is asked for, a lock or readers where a permit is, or a
	// key of another Redis type. The node set nothing; the NodeError names
	// the kind the key holds. Every acquisition refuses it at once, without
	// waiting: mixing kinds on one key is a programming error.
	ErrWrongKind = lease.ErrWrongKind
	// ErrMaxHold is the cause, wrapped with ErrLockLost, of the loss of a
	// lock whose keeper stopped extending it at its maximum hold
	// (WithMaxHold).
	ErrMaxHold = errors.New("redlock: maximum hold reached")
	// ErrNoLeader means no campaigner leads the election: no token holds
	// its key on a majority of the nodes, or the one that does has not
	// recorded its value yet (Client.Leader).
	ErrNoLeader = errors.New("redlock: no leader")
	// ErrNotProclaimed means Leadership.Proclaim did not reach a majority
	// although the leadership may still last: nodes did not answer in time.
	ErrNotProclaimed = errors.New("redlock: value not proclaimed")
)

// NodeError is one node's failure within an operation. It is reachable with
// errors.As from the error of any operation.
type NodeError struct {
	// Node is the node's index in the pools given to New.
	Node int
	// Addr is the node's address, without credentials.
	Addr string
	// Err is what happened on the node: ErrTaken, ErrNotHeld, a network
	// error, ErrNodeTimeout for a node that did not answer in time,
	// ErrPending for one that had not answered when the operation decided,
	// or ErrLockDelay for a key in its lock-delay (WithLockDelay).
	Err error
}

// Error names the node and its cause, without repeating the "redlock: "
// prefix of the operation's error it is part of.
func (e *NodeError) Error() string {
	return fmt.Sprintf("node %d (%s): %s", e.Node, e.Addr, unprefixed(e.Err))
}

// Unwrap returns the node's cause.
func (e *NodeError) Unwrap() error { return e.Err }

// QuorumError is the error of an operation that did not reach a majority. It
// wraps its sentinel (ErrNotObtained, ErrNotHeld, ErrNotExtended,
// ErrNotReleased), the context's error when the context ended the call, and
// one *NodeError per node that did not agree.
type QuorumError struct {
	// Op is the operation: "lock", "extend", "unlock", "status", and for
	// elections "proclaim" (a leader's value written) or "leader" (read).
	Op string
	// Agreed counts the nodes that said yes (for "status": that answered);
	// Needed is the majority; Total the number of nodes.
	Agreed, Needed, Total int
	// Nodes lists every node that did not agree, in node order, and why;
	// a node that had not answered when the call decided is listed with
	// ErrPending.
	Nodes []*NodeError
	// Reason says why in words when it is not the votes (validity used up).
	Reason string

	sentinel error
	ctxErr   error
}

func (e *QuorumError) Error() string {
	var b strings.Builder
	b.WriteString(e.sentinel.Error())
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	verb := "agreed"
	if e.Op == "status" || e.Op == "leader" {
		verb = "answered"
	}
	fmt.Fprintf(&b, ": %d of %d nodes %s, %d needed", e.Agreed, e.Total, verb, e.Needed)
	if e.ctxErr != nil {
		fmt.Fprintf(&b, ": %v", e.ctxErr)
	}
	for i, n := range e.Nodes {
		if i == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(n.Error())
		if i == len(e.Nodes)-1 {
			b.WriteString(")")
		}
	}
	return b.String()
}

// Unwrap returns the sentinel, the context's error if any, and the node errors.
func (e *QuorumError) Unwrap() []error {
	errs := make([]error, 0, 2+len(e.Nodes))
	errs = append(errs, e.sentinel)
	if e.ctxErr != nil {
		errs = append(errs, e.ctxErr)
	}
	for _, n := range e.Nodes {
		errs = append(errs, n)
	}
	return errs
}

// nodeCause is the cause a NodeError reports for err, the failure of one
// node call. A call cut by its deadline is ErrNodeTimeout: the node timeout
// is this package's bound, not the caller's, and must not make the
// operation's error match context.DeadlineExceeded. (When the caller's
// context ended the call, withContext adds its error to the operation's.)
func nodeCause(err error) error { return node.Cause(err) }

// unprefixed is err's message without this package's "redlock: " prefix,
// for an error quoted inside another of ours.
func unprefixed(err error) string {
	return strings.TrimPrefix(err.Error(), "redlock: ")
}

// ended returns ctx's error, or context.DeadlineExceeded once ctx's
// deadline has passed while its own timer has not yet fired. A node call's
// socket deadline is ctx's deadline (when it is the nearer), and the socket
// can time out a hair before ctx's timer marks ctx done: an attempt cut
// that way was cut by the caller. It must end the call, not be retried
// after, and the attempt before it says more about why the call failed.
func ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// afterAttempt decides what a blocking call does after an attempt that
// ended with err, prev being the error of the last attempt that ran to its
// decision (nil for none): it returns the error to report and whether the
// call ends (success, ctx ended, or no retry left). An attempt cut by ctx
// reports prev, which says more, with ctx's error.
func afterAttempt(ctx context.Context, err, prev error, retry bool) (error, bool) {
	cut := ended(ctx)
	if err != nil && cut != nil {
		err = withContext(cmp.Or(prev, err), cut)
	}
	return err, err == nil || cut != nil || !retry
}

// stopped is the error of a call that retries whose pause was cut by cause
// (wait.HubConfig.Stopped): last, the last attempt's error, with ctx's
// error, or with ErrClosed.
func stopped(last, cause error) error {
	if errors.Is(cause, wait.ErrClosed) {
		return errors.Join(last, ErrClosed)
	}
	return withContext(last, cause)
}

// withContext returns err joined with ctx's error when ctx has ended, so that
// errors.Is finds both the sentinel and context.Canceled or DeadlineExceeded.
func withContext(err error, ctxErr error) error {
	if ctxErr == nil || errors.Is(err, ctxErr) {
		return err
	}
	var qe *QuorumError
	if errors.As(err, &qe) && qe.ctxErr == nil {
		cp := *qe
		cp.ctxErr = ctxErr
		return &cp
	}
	return errors.Join(err, ctxErr)
}

// quorumError builds the error of an operation from its votes, with one
// NodeError per node that did not vote yes, in node order. A plain no is
// reported as ErrTaken for a lock and as ErrNotHeld otherwise; a node with
// no vote (a straggler) as ErrNodeTimeout when the decision came at the node
// timeout, else as ErrPending. A lock's refusal from a node that another
// node is known to be the server of is an ErrNodeSameServer carrying it
// (node.Set.Refused): one server is not two holders.
func (c *Client) quorumError(op string, sentinel error, res fanout.Result) *QuorumError {
	qe := &QuorumError{Op: op, Agreed: res.Yes, Needed: c.nodes.Quorum(), Total: c.nodes.Len(), sentinel: sentinel}
	causes := make([]error, c.nodes.Len())
	silent := ErrPending
	if res.Expired {
		silent = ErrNodeTimeout // the decision came at the node timeout
	}
	for i := range causes {
		causes[i] = silent
	}
	for _, v := range res.Votes {
		switch {
		case v.OK:
			causes[v.Node] = nil
		case v.Err != nil:
			causes[v.Node] = nodeCause(v.Err)
		case op == "lock":
			causes[v.Node] = ErrTaken
		default:
			causes[v.Node] = ErrNotHeld
		}
	}
	for i, cause := range causes {
		if op == "lock" && isHeldCause(cause) {
			cause = c.notHolder(i, c.nodes.Refused(i, cause)) // a server under two addresses is not two holders; a quarantined copy is no holder
		}
		if cause != nil {
			qe.Nodes = append(qe.Nodes, &NodeError{Node: i, Addr: c.nodes.Pool(i).Addr(), Err: cause})
		}
	}
	return qe
}

// notHolder is the cause of node i, which refused an acquisition because
// the key is held there (cause): a quarantined node's copy of a key holds
// nobody's lock that counts, so it is reported as the quarantine
// (ErrNodeQuarantined, a failed node, never a holder: IsContended), and
// any other node's refusal as it is.
func (c *Client) notHolder(i int, cause error) error {
	left := c.nodes.Quarantined(i)
	if left <= 0 {
		return cause
	}
	return fmt.Errorf("%w: its copy of the key (%s) holds no lock that counts; counts in %v",
		ErrNodeQuarantined, unprefixed(cause), left.Truncate(time.Second))
}

// ErrLockLost means a lock that was being kept alive can no longer be
// guaranteed: an extension was refused by a majority, or extensions did not
// get through before validity was about to run out. Errors wrapping it also
// wrap the last extension error, with its per-node detail.
var ErrLockLost = errors.New("redlock: lock lost")

// isHeldCause reports whether a node's cause says the key is held there:
// by another owner, as another kind, or in its lock-delay.
func isHeldCause(err error) bool {
	return errors.Is(err, ErrTaken) || errors.Is(err, ErrWrongKind) || errors.Is(err, ErrLockDelay)
}

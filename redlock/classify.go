package redlock

import "errors"

// IsContended reports whether err, the failure of an acquisition (it wraps
// ErrNotObtained: TryLock, Lock, TryRLock, RLock, TryAcquirePermit,
// AcquirePermit, TryLockAll, LockAll, Campaign, TryDo, Do, DoAll, Lead, and
// the fence phase of Resume WithFencing), failed because the key is held:
// trying again later, or waiting longer, may succeed. IsUnavailable is
// true for every other such error, and both are false for an error that
// does not wrap ErrNotObtained (a bad argument, ErrClosed at the call's
// start, a Resume refused with ErrNotHeld or ErrNotExtended), so that for
// every acquisition error exactly one of them holds.
//
// The rule reads the votes the error reports (its *QuorumError, the first
// errors.As finds), of n nodes of which a majority needs m, so that a
// majority can spare n-m of them:
//
//   - holders: the nodes whose cause says the key is held, by another
//     owner (ErrTaken, a waiter's queue included), as another kind of lock
//     (ErrWrongKind), or in its lock-delay (ErrLockDelay). A key reserved
//     for a waiting LockAll (free, kept for the head of its queue: Status
//     reports it free, NodeStatus.Reserved) refuses with ErrTaken too, and
//     counts here: a caller that came earlier is served first, and waiting
//     may succeed, so the refusal is contended, not unavailable;
//   - failed: the nodes listed with any other cause but ErrPending: no
//     answer within the node timeout or before the caller's deadline
//     (ErrNodeTimeout), a connection or command error (a refused password
//     included), or a yes that did not count for the node's health
//     (ErrNodeQuarantined, ErrNodeClock), and any answer, a refusal
//     included, of a node that is another node's server under another
//     address (ErrNodeSameServer);
//   - a node with ErrPending counts for neither: it had not answered when
//     the attempt decided (its answers had put the majority out of reach,
//     or, once a node said the key is held, the short grace given to the
//     others ran out), so what it would have said is unknown.
//
// The error is contended when
//
//	holders > n-m, or holders > 0 and holders >= failed
//
// that is, when the holders alone leave no majority possible, or when the
// key was found held on at least as many nodes as failed. It is
// unavailable otherwise: more nodes failed than hold the key (as when a
// majority of the nodes is down or quarantined and said so), or no node
// said the key is held (a majority of the
// nodes silent for the node timeout; a majority agreed but too late:
// validity used up; the caller's context ended the call before any node
// said so; the fence counter exhausted). Check ctx.Err() first when a
// call cut by its own context must be told apart.
//
// The votes are those the attempt had when it decided, not a read of the
// nodes after it, and an attempt decides as soon as its answers put the
// majority out of reach. On five nodes with one down and the key held,
// that is two holders and the down node: contended. With two of five down
// and the key held, the two refusals usually come first, and one holder
// with them reads as unavailable; with three of five down, two holders
// answering before the second refusal read as contended, and so do
// holders on the live nodes when the others are silent rather than
// refusing (unanswered after the grace, not failed). A Lock that waited has
// the answers of every live node from its rounds in the queue.
func IsContended(err error) bool {
	if !errors.Is(err, ErrNotObtained) {
		return false
	}
	holders, failed, spare := refusalTally(err)
	return holders > spare || (holders > 0 && holders >= failed)
}

// IsUnavailable reports whether err, the failure of an acquisition (it
// wraps ErrNotObtained), failed for want of nodes rather than because the
// key is held: too many nodes silent, failing or not counted for their
// health (restart quarantine, clock check) for a majority, or no node
// that said the key is held. Waiting for a holder does not help; an
// operator may have to bring nodes back. It is false for an error that
// does not wrap ErrNotObtained, and for one that does it is exactly
// !IsContended(err): see IsContended for the rule.
func IsUnavailable(err error) bool {
	return errors.Is(err, ErrNotObtained) && !IsContended(err)
}

// refusalTally counts, in the votes err reports, the nodes that said the
// key is held and those that failed, and returns them with how many nodes
// a majority can spare. Without votes (no *QuorumError) all are 0.
func refusalTally(err error) (holders, failed, spare int) {
	var qe *QuorumError
	if !errors.As(err, &qe) {
		return 0, 0, 0
	}
	for _, n := range qe.Nodes {
		switch {
		case errors.Is(n.Err, ErrNodeSameServer): // its refusal too: the server counts once
			failed++
		case isHeldCause(n.Err):
			holders++
		case errors.Is(n.Err, ErrPending): // unknown: neither
		default:
			failed++
		}
	}
	return holders, failed, qe.Total - qe.Needed
}

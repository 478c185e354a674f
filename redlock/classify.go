package redlock

import "errors"

// IsContended reports whether err, the failure of an acquisition (it wraps
// ErrNotObtained: TryLock, Lock, TryRLock, RLock, AcquirePermit,
// TryLockAll, LockAll, Campaign, TryDo, Do, DoAll, Lead), failed because
// the key is held: trying again later, or waiting longer, may succeed.
// IsUnavailable is true for every other such error, and both are false for
// an error that does not wrap ErrNotObtained (a bad argument, ErrClosed at
// the call's start, a Resume refused with ErrNotHeld), so that for every
// acquisition error exactly one of them holds.
//
// The rule reads the votes the error reports (its *QuorumError, the first
// errors.As finds), of n nodes of which a majority needs m, so that a
// majority can do without n-m of them. The holders are the nodes whose
// cause says the key is held: by another owner (ErrTaken, a waiter's queue
// included), as another kind of lock (ErrWrongKind), or in its lock-delay
// (ErrLockDelay). The failed nodes are the others listed with a cause but
// ErrPending: no answer within the node timeout or before the caller's
// deadline (ErrNodeTimeout), a connection or command error (a refused
// password included), or a yes that did not count for the node's health
// (ErrNodeQuarantined, ErrNodeClock). A node with ErrPending had not
// answered when the attempt decided, and counts for neither. The error is
// contended when
//
//	holders > n-m, or holders > 0 and failed <= n-m
//
// that is, when the holders alone leave no majority possible, or when some
// node said the key is held and the failed nodes alone would not have
// kept the majority out of reach (a majority of the nodes is reachable).
// It is unavailable otherwise: the failed nodes are too many for a
// majority (as when a majority of the nodes is down or quarantined,
// whether or not the key is held on the others), or no node said the key
// is held (a majority agreed but too late: validity used up; the caller's
// context ended the call before any node said so; the fence counter
// exhausted). Check ctx.Err() first when a call cut by its own context
// must be told apart.
//
// The votes are those the call had when it decided, not a read of the
// nodes after it: an attempt decides as soon as the majority is out of
// reach, and on five nodes with one down and the key held, two holders and
// the failed node decide it (contended: one failed node leaves a majority
// reachable), while on five nodes with three down, two holders and one
// failed node can decide it before the other two fail (also contended, by
// the votes it had). A Lock that waited has every live node's answer from
// its rounds in the queue.
func IsContended(err error) bool {
	if !errors.Is(err, ErrNotObtained) {
		return false
	}
	holders, failed, spare := refusalTally(err)
	return holders > spare || (holders > 0 && failed <= spare)
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
// a majority can do without. Without votes (no *QuorumError) all are 0.
func refusalTally(err error) (holders, failed, spare int) {
	var qe *QuorumError
	if !errors.As(err, &qe) {
		return 0, 0, 0
	}
	for _, n := range qe.Nodes {
		switch {
		case isHeldCause(n.Err):
			holders++
		case errors.Is(n.Err, ErrPending):
		default:
			failed++
		}
	}
	return holders, failed, qe.Total - qe.Needed
}

// isHeldCause reports whether a node's cause says the key is held there:
// by another owner, as another kind, or in its lock-delay.
func isHeldCause(err error) bool {
	return errors.Is(err, ErrTaken) || errors.Is(err, ErrWrongKind) || errors.Is(err, ErrLockDelay)
}

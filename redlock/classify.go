package redlock

import "errors"

// IsContended reports whether err, the failure of an acquisition (it wraps
// ErrNotObtained), failed because the key is held: trying again later, or
// waiting longer, may succeed. For every error that wraps ErrNotObtained
// exactly one of IsContended and IsUnavailable is true; both are false for
// any other error (a bad argument, ErrClosed at the call's start, a Resume
// refused with ErrNotHeld or ErrNotExtended).
//
// The rule reads the votes of err's *QuorumError, as they stood when the
// attempt decided, of n nodes of which a majority needs m:
//
//   - holders: nodes whose cause says the key is held (ErrTaken, a key
//     reserved for a waiting LockAll included; ErrWrongKind; ErrLockDelay);
//   - failed: nodes with any other cause but ErrPending (ErrNodeTimeout, a
//     network or command error, ErrNodeQuarantined, ErrNodeClock), and any
//     answer of a node with ErrNodeSameServer;
//   - nodes with ErrPending count for neither.
//
// err is contended when holders > n-m, or holders > 0 and holders >= failed.
// Check ctx.Err() first to tell a call cut by its own context apart.
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

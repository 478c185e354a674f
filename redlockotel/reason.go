package redlockotel

import (
	"context"
	"errors"
	"net"
	"os"

	"github.com/redlockgo/redlock/redlock"
)

// Values of the redlock.reason attribute (and of error.type on spans): why an
// operation or a node failed, from errors.Is and errors.As on its error.
const (
	// reasonClosed: the Client was closed (ErrClosed).
	reasonClosed = "closed"
	// reasonValidity: a majority agreed but too late, or the lock's own
	// clock said its validity had run out before the operation could help.
	reasonValidity = "validity"
	// reasonTaken: nodes hold the key for another owner (ErrTaken).
	reasonTaken = "taken"
	// reasonTimeout: nodes did not answer within the node timeout
	// (redlock.ErrNodeTimeout), or the caller's deadline passed.
	reasonTimeout = "timeout"
	// reasonCanceled: the caller's context was canceled.
	reasonCanceled = "canceled"
	// reasonNotHeld: a majority answered that they no longer hold the
	// lock's token (ErrNotHeld): it expired on the nodes.
	reasonNotHeld = "not_held"
	// reasonNetwork: the connection failed (refused, reset, no route).
	reasonNetwork = "network"
	// reasonError: anything else: authentication, TLS verification, a
	// script error.
	reasonError = "error"
)

// reason classifies the error of a failed operation. The first matching
// cause wins, from the most to the least specific: a lock refused because
// another owner holds it is "taken" even when the caller's deadline ended
// the wait.
func reason(err error) string {
	var qe *redlock.QuorumError
	quorum := errors.As(err, &qe)
	switch {
	case errors.Is(err, redlock.ErrClosed):
		return reasonClosed
	case quorum && qe.Agreed >= qe.Needed:
		return reasonValidity // the votes were there; the time was not
	case errors.Is(err, redlock.ErrTaken):
		return reasonTaken
	case !quorum && (errors.Is(err, redlock.ErrNotHeld) || errors.Is(err, redlock.ErrLockLost)):
		// Decided by the lock's clock without asking the nodes.
		return reasonValidity
	}
	return nodeReason(err)
}

// nodeReason classifies the error of one node.
func nodeReason(err error) string {
	switch {
	case errors.Is(err, redlock.ErrClosed):
		return reasonClosed
	case errors.Is(err, redlock.ErrTaken):
		return reasonTaken
	case isTimeout(err):
		return reasonTimeout
	case errors.Is(err, context.Canceled):
		return reasonCanceled
	case errors.Is(err, redlock.ErrNotHeld):
		return reasonNotHeld
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return reasonNetwork
	}
	return reasonError
}

func isTimeout(err error) bool {
	if errors.Is(err, redlock.ErrNodeTimeout) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

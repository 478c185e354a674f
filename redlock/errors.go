package redlock

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors, for errors.Is. Errors returned by this package wrap them;
// they are never returned bare when per-node detail exists.
var (
	// ErrNotObtained means Lock or TryLock did not get the lock: a majority
	// refused, could not be reached in time, or no validity was left.
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
)

// NodeError is one node's failure within an operation. It is reachable with
// errors.As from the error of any operation.
type NodeError struct {
	// Node is the node's index in the pools given to New.
	Node int
	// Addr is the node's address, without credentials.
	Addr string
	// Err is what happened on the node: ErrTaken, a network error,
	// context.DeadlineExceeded for a node that did not answer in time.
	Err error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("node %d (%s): %v", e.Node, e.Addr, e.Err)
}

// Unwrap returns the node's cause.
func (e *NodeError) Unwrap() error { return e.Err }

// QuorumError is the error of an operation that did not reach a majority. It
// wraps its sentinel (ErrNotObtained, ErrNotHeld, ErrNotExtended,
// ErrNotReleased), the context's error when the context ended the call, and
// one *NodeError per node that did not agree.
type QuorumError struct {
	// Op is the operation: "lock", "extend" or "unlock".
	Op string
	// Agreed counts the nodes that said yes; Needed is the majority; Total
	// the number of nodes.
	Agreed, Needed, Total int
	// Nodes lists the nodes that did not agree and why; stragglers that had
	// not answered when the call decided are not listed.
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
	fmt.Fprintf(&b, ": %d of %d nodes agreed, %d needed", e.Agreed, e.Total, e.Needed)
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

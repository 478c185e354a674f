package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// Sentinel errors of a node's health and silence. The redlock package
// exports them under its own names (redlock.ErrNodeTimeout, ...): the
// values are these, so errors.Is matches either name.
var (
	// ErrTimeout is the per-node cause when a node did not answer within
	// the node timeout.
	ErrTimeout = errors.New("redlock: no answer within the node timeout")
	// ErrQuarantined is the per-node cause when a node said yes but
	// restarted less than the quarantine ago without persisting every
	// write.
	ErrQuarantined = errors.New("redlock: node quarantined after a restart")
	// ErrUnverified is the cause reported for a node whose age cannot be
	// read, so that it cannot be quarantined: the node counts.
	ErrUnverified = errors.New("redlock: node age unknown")
	// ErrClock is the per-node cause when a node said yes but its clock was
	// seen running fast or jumping forward beyond the drift allowance.
	ErrClock = errors.New("redlock: node clock beyond the drift bound")
)

// Cause is err as a node's cause: a call cut by its deadline (the node
// timeout's context, or a socket deadline) is ErrTimeout, so that it does
// not match context.DeadlineExceeded, which stays the caller's. Any other
// error is returned as it is.
func Cause(err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return ErrTimeout
	}
	return err
}

// errMalformedHorizon is the error of a horizon reply of the wrong shape.
var errMalformedHorizon = errors.New("redlock: malformed horizon reply")

// ReturnedError is what a Returned report says: node's run RunID counts
// again, After its start, every lease it could have forgotten having
// expired. It is a report, not a failure.
type ReturnedError struct {
	RunID string
	After time.Duration
}

func (e *ReturnedError) Error() string {
	return fmt.Sprintf("run %s counts again %v after its start: every lease it could have forgotten has expired",
		e.RunID, e.After.Truncate(time.Millisecond))
}

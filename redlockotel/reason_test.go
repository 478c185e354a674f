package redlockotel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/redlockgo/redlock/redlock"
)

// The reasons of errors built without a QuorumError; the others are checked
// on real operations in observer_test.go.
func TestReason(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		name string
		err  error
		op   string // reason of the operation
		node string // reason as one node's cause
	}{
		{"Closed", redlock.ErrClosed, reasonClosed, reasonClosed},
		{"LostWhenClosed", fmt.Errorf("%w: %w", redlock.ErrLockLost, redlock.ErrClosed), reasonClosed, reasonClosed},
		{"LostWithoutExtension", fmt.Errorf("%w: validity ends soon", redlock.ErrLockLost), reasonValidity, reasonError},
		{"ExtendAfterValidity", fmt.Errorf("%w: validity ended 1s ago", redlock.ErrNotHeld), reasonValidity, reasonNotHeld},
		{"Taken", redlock.ErrTaken, reasonTaken, reasonTaken},
		{"NodeTimeout", redlock.ErrNodeTimeout, reasonTimeout, reasonTimeout},
		{"Deadline", context.DeadlineExceeded, reasonTimeout, reasonTimeout},
		{"SocketTimeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, reasonTimeout, reasonTimeout},
		{"Canceled", context.Canceled, reasonCanceled, reasonCanceled},
		{"Refused", refused, reasonNetwork, reasonNetwork},
		{"Auth", errors.New("WRONGPASS invalid username-password pair"), reasonError, reasonError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := reason(tc.err); got != tc.op {
				t.Errorf("reason(%v) = %q, want %q", tc.err, got, tc.op)
			}
			if got := nodeReason(tc.err); got != tc.node {
				t.Errorf("nodeReason(%v) = %q, want %q", tc.err, got, tc.node)
			}
		})
	}
}

package redlock

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/redlockgo/redlock/internal/lease"
)

// The rule of IsContended and IsUnavailable, vote by vote: the holders
// alone leave no majority, or they are at least as many as the failed
// nodes (a node that had not answered at the decision counts for
// neither).
func TestContendedUnavailableRule(t *testing.T) {
	taken := fmt.Errorf("%w: key %q", ErrTaken, "k")
	down := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	auth := errors.New("WRONGPASS invalid username-password pair")
	for _, tc := range []struct {
		name      string
		total     int
		causes    []error // one per node that did not agree
		contended bool
	}{
		{"held everywhere", 5, []error{taken, taken, taken, taken, taken}, true},
		{"held on a bare majority, the rest cut off", 5, []error{taken, taken, taken, ErrPending, ErrPending}, true},
		{"held on one, two silent after the grace", 5, []error{taken, ErrPending, ErrPending}, true},
		{"held on two, three silent after the grace", 5, []error{taken, taken, ErrPending, ErrPending, ErrPending}, true},
		{"another kind", 5, []error{lease.KindError("permits", "k"), taken, taken}, true},
		{"lock-delay", 3, []error{ErrLockDelay, ErrLockDelay}, true},
		{"one of five down, held on the others", 5, []error{down, taken, taken, ErrPending, ErrPending}, true},
		{"one of three down, held on the others", 3, []error{down, taken, ErrPending}, true},
		{"two down, one holder heard", 5, []error{down, down, taken, ErrPending, ErrPending}, false},
		{"one down, one silent, held on three", 5, []error{down, taken, taken, taken, ErrPending}, true},
		{"three down, free", 5, []error{down, down, down}, false},
		{"three down, held on the others", 5, []error{down, down, down, taken, taken}, false},
		{"a majority silent", 5, []error{ErrNodeTimeout, ErrNodeTimeout, ErrNodeTimeout}, false},
		{"a majority quarantined", 5, []error{ErrNodeQuarantined, ErrNodeQuarantined, ErrNodeQuarantined}, false},
		{"a majority with a clock fault", 3, []error{ErrNodeClock, ErrNodeClock}, false},
		{"credentials refused", 3, []error{auth, auth, auth}, false},
		{"validity used up", 5, nil, false},
		{"nothing answered before the decision", 5, []error{ErrPending, ErrPending, ErrPending}, false},
		{"four nodes: holders and failures both rule a majority out", 4, []error{taken, taken, down, down}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			qe := &QuorumError{Op: "lock", Total: tc.total, Needed: tc.total/2 + 1, sentinel: ErrNotObtained}
			qe.Agreed = tc.total - len(tc.causes)
			for i, c := range tc.causes {
				qe.Nodes = append(qe.Nodes, &NodeError{Node: i, Addr: "n", Err: c})
			}
			for _, err := range []error{
				qe,
				withContext(qe, context.DeadlineExceeded),
				errors.Join(qe, ErrClosed),
				fmt.Errorf("%w: the leader's value was not recorded: %w", ErrNotObtained, qe),
			} {
				assert.Equal(t, tc.contended, IsContended(err), "IsContended(%v)", err)
				assert.Equal(t, !tc.contended, IsUnavailable(err), "IsUnavailable(%v)", err)
			}
		})
	}
}

// Errors that are not an acquisition's failure are neither; one that is
// but has no votes is unavailable.
func TestContendedUnavailableOutsideVotes(t *testing.T) {
	for _, err := range []error{nil, ErrClosed, ErrNotHeld, errors.New("redlock: empty key"), context.Canceled,
		&QuorumError{Op: "extend", Total: 3, Needed: 2, sentinel: ErrNotExtended, Nodes: []*NodeError{{Err: ErrTaken}, {Err: ErrTaken}}}} {
		assert.False(t, IsContended(err), "IsContended(%v)", err)
		assert.False(t, IsUnavailable(err), "IsUnavailable(%v)", err)
	}
	exhausted := fmt.Errorf("%w: the fence counter of %q is exhausted", ErrNotObtained, "k")
	assert.False(t, IsContended(exhausted))
	assert.True(t, IsUnavailable(exhausted))
}

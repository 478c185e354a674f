package node

import (
	"errors"
	"sync/atomic"
)

// silence remembers, per node, whether the Client's latest call there that
// ended was cut by the node timeout: the node is silent (blackholed,
// stopped), as far as this Client knows. Any answer clears it. A waiter
// starts from it: without it, each new Lock call would count a silent node
// as able to grant until its own round there timed out, and a split among
// waiters with such a node in it would last a node timeout for every call.
type silence []atomic.Bool

// note records the outcome of a call to node i that ended with err.
func (s silence) note(i int, err error) {
	if i < len(s) {
		s[i].Store(err != nil && errors.Is(Cause(err), ErrTimeout))
	}
}

// silent reports whether node i's latest call timed out.
func (s silence) silent(i int) bool { return i < len(s) && s[i].Load() }

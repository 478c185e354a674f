package node

import (
	"context"
	"errors"
	"sync/atomic"
)

// State is what the Client last learned of a node from its answers, kept
// per node without I/O and read by the degraded warning and NodeStates. It
// is made of two parts, each kept where it is learned:
//
//	reach (Note, every judged answer and every release):
//	  an answer, or a refusal about the key (Config.Refusal)  -> StateOK
//	  cut by a deadline (ErrTimeout)                           -> StateSilent
//	  any other error (network, NOPERM, a malformed reply)     -> StateFailing
//	  cut by the caller's cancellation (context.Canceled)      -> unchanged
//	trust (Health, every yes that would count, and every grant):
//	  the checks let the node count                            -> StateOK
//	  ErrQuarantined (restart, or a cluster shard's failover)  -> StateQuarantined
//	  ErrClock                                                 -> StateClockSuspect
//	  any other error of a check (a shard's reign unread)      -> StateFailing
//
// The node's State is its reach when that is not StateOK, else its trust,
// which only a yes changes.
type State uint32

// States of a node.
const (
	StateOK State = iota
	StateSilent
	StateFailing
	StateQuarantined
	StateClockSuspect
)

// nodeState is one node's State parts, and the error that made each one
// (nil for StateOK). Each part is stored only when it changes, so that the hot
// path of a healthy node is two atomic loads, and no store shares a cache
// line across the nodes' goroutines.
type nodeState struct {
	reach, trust       atomic.Uint32
	reachErr, trustErr atomic.Pointer[error]
}

// set stores s in part with its cause err, when it differs from what part
// holds. The cause is stored first: a reader that sees the new state sees
// its cause, or a later one.
func set(part *atomic.Uint32, cause *atomic.Pointer[error], s State, err error) {
	if State(part.Load()) == s {
		return
	}
	if s == StateOK {
		cause.Store(nil)
	} else {
		p := new(error) // only on a change: never on a healthy node's path
		*p = err
		cause.Store(p)
	}
	part.Store(uint32(s))
}

// noteReach records the reach part of node i from err, how its latest call
// ended (see State).
func (s *Set) noteReach(i int, err error) {
	if i >= len(s.states) {
		return
	}
	st := &s.states[i]
	switch {
	case err == nil:
		if State(st.reach.Load()) != StateOK { // the common case: one load
			set(&st.reach, &st.reachErr, StateOK, nil)
		}
	case errors.Is(Cause(err), ErrTimeout):
		set(&st.reach, &st.reachErr, StateSilent, err)
	case errors.Is(err, context.Canceled):
	case s.cfg.Refusal != nil && s.cfg.Refusal(err):
		set(&st.reach, &st.reachErr, StateOK, nil)
	default:
		set(&st.reach, &st.reachErr, StateFailing, err)
	}
}

// noteTrust records the trust part of node i from err, what its health
// checks returned (see State).
func (s *Set) noteTrust(i int, err error) {
	if i >= len(s.states) {
		return
	}
	st := &s.states[i]
	switch {
	case err == nil:
		if State(st.trust.Load()) != StateOK {
			set(&st.trust, &st.trustErr, StateOK, nil)
		}
	case errors.Is(err, ErrQuarantined):
		set(&st.trust, &st.trustErr, StateQuarantined, err)
	case errors.Is(err, ErrClock):
		set(&st.trust, &st.trustErr, StateClockSuspect, err)
	case errors.Is(err, context.Canceled):
	default:
		set(&st.trust, &st.trustErr, StateFailing, err)
	}
}

// State returns node i's State and the error that made it (nil for StateOK).
// It does no I/O and takes no lock.
func (s *Set) State(i int) (State, error) {
	st := &s.states[i]
	if r := State(st.reach.Load()); r != StateOK {
		return r, deref(st.reachErr.Load())
	}
	if t := State(st.trust.Load()); t != StateOK {
		return t, deref(st.trustErr.Load())
	}
	return StateOK, nil
}

func deref(p *error) error {
	if p == nil {
		return nil
	}
	return *p
}

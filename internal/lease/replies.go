package lease

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redlockgo/redlock/internal/scripts"
	"github.com/redlockgo/redlock/internal/wait"
)

// The node causes a kind's calls report, re-exported by package redlock.
var (
	// ErrWrongKind: the key holds another kind of lock, or a key of
	// another Redis type; the node set nothing.
	ErrWrongKind = errors.New("redlock: key holds another kind of lock")
	// ErrLockDelay: the key's last holder expired without a release less
	// than the lock-delay ago; the node set nothing.
	ErrLockDelay = errors.New("redlock: lock-delay after an expired holder")
	// ErrMalformed: a reply of a shape its script never gives.
	ErrMalformed = errors.New("malformed reply from node")
	// ErrLeft: a round of a waiter that already left the queue.
	ErrLeft = errors.New("left the queue")
)

// KindError is the node cause of a refusal because the key holds kind
// (kind.lua's names), which key names when it is given.
func KindError(kind any, key string) error {
	k, _ := kind.(string)
	what := map[string]string{"permits": "permits (a semaphore)", "lock": "a lock", "readers": "readers"}[k]
	if what == "" {
		what = fmt.Sprintf("a Redis %s", k)
	}
	if key != "" {
		return fmt.Errorf("%w: key %q holds %s", ErrWrongKind, key, what)
	}
	return fmt.Errorf("%w: it holds %s", ErrWrongKind, what)
}

// DelayError is the node cause of a refusal for the lock-delay, left
// being how much of it remains.
func DelayError(left time.Duration) error {
	return fmt.Errorf("%w: %v left", ErrLockDelay, left)
}

// IsKnownRefusal reports whether err is a refusal after which the node is
// known to hold nothing of the call: the lock-delay, or another kind.
func IsKnownRefusal(err error) bool {
	return err != nil && (errors.Is(err, ErrLockDelay) || errors.Is(err, ErrWrongKind))
}

// Int reads an integer reply (0 for anything else).
func Int(v any) int64 {
	n, _ := v.(int64)
	return n
}

// millis reads a reply's count of milliseconds as a duration, 0 when
// negative.
func millis(v any) time.Duration { return time.Duration(max(Int(v), 0)) * time.Millisecond }

// array reads a reply that must be a non-empty array.
func array(v any) ([]any, error) {
	arr, _ := v.([]any)
	if len(arr) == 0 {
		return nil, ErrMalformed
	}
	return arr, nil
}

// Counter reads a fence counter from a script's reply (a decimal string);
// key names the counter in the error, if known. A counter that is not a
// number fails the node: the key is ours there, so the attempt's cleanup
// releases it.
func Counter(v any, key string) (uint64, error) {
	s, _ := v.(string)
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		if key != "" {
			key += " "
		}
		return 0, fmt.Errorf("redlock: fence counter %sis not a number: %q", key, s)
	}
	return n, nil
}

// readRefusal is the error of a kind-checked take's reply that refuses for
// what the key holds: {OtherKind, kind} (another kind of lock) or
// {TakeDelayed, pttl} (the lock-delay); nil for any other reply.
func readRefusal(arr []any) error {
	switch {
	case len(arr) < 2:
	case Int(arr[0]) == scripts.OtherKind:
		return KindError(arr[1], "")
	case Int(arr[0]) == scripts.TakeDelayed:
		return DelayError(millis(arr[1]))
	}
	return nil
}

// readTake reads the reply of a reader's or a permit's take: {1, [place,]
// counter}, {0, ...}, or a refusal (readRefusal).
func readTake(v any, withPlace bool, t *Take) (bool, error) {
	arr, err := array(v)
	if err != nil {
		return false, err
	}
	if err := readRefusal(arr); err != nil || Int(arr[0]) != 1 {
		return false, err
	}
	if withPlace {
		if len(arr) < 3 {
			return false, ErrMalformed
		}
		t.Place, _ = arr[1].(string)
		arr = arr[1:]
	}
	if len(arr) < 2 {
		return false, ErrMalformed
	}
	n, err := Counter(arr[1], "")
	if err != nil {
		return false, err
	}
	t.Counter = n
	return true, nil
}

// readSet reads the reply of a delayed or fenced SET (acquire_delay.lua,
// acquire_fenced.lua): {AcquireSet, [counter]}, {AcquireHeld} or
// {AcquireDelayed, pttl}. It returns the reply's rest after the code.
func readSet(v any) (bool, []any, error) {
	arr, err := array(v)
	if err != nil {
		return false, nil, err
	}
	switch Int(arr[0]) {
	case scripts.AcquireSet:
		return true, arr[1:], nil
	case scripts.AcquireHeld:
		return false, nil, nil
	case scripts.AcquireDelayed:
		if len(arr) > 1 {
			return false, nil, DelayError(millis(arr[1]))
		}
	}
	return false, nil, ErrMalformed
}

// readRelease reads the reply of a release that may hand keys to waiters
// (release.lua, release_all.lua, rlock_release.lua, owned_release.lua):
// {code, [token, seq]...}. Each hand-off to a waiter of this Client is
// delivered to it at once (it hears nothing published); the code is
// returned.
func (e *Env) readRelease(i int, v any, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	arr, err := array(v)
	if err != nil {
		return 0, err
	}
	for j := 1; j+1 < len(arr); j += 2 {
		if next, ok := arr[j].(string); ok {
			e.Grants.Deliver(next, i, int(Int(arr[j+1])))
		}
	}
	return Int(arr[0]), nil
}

// readEnqueue reads Enqueue's reply into r.
func readEnqueue(v any, r *wait.Reply) error {
	arr, err := array(v)
	if err != nil {
		return err
	}
	r.Code = Int(arr[0])
	switch r.Code {
	case scripts.EnqueueSet:
	case scripts.EnqueueGranted:
		if len(arr) < 2 {
			return ErrMalformed
		}
		r.GrantSeq = int(Int(arr[1]))
	case scripts.EnqueueQueued:
		if len(arr) > 1 {
			r.Holder, _ = arr[1].(string)
		}
		if len(arr) > 2 {
			r.HolderTTL = millis(arr[2])
		}
		r.Delayed = len(arr) > 3 && Int(arr[3]) == 1
	case scripts.EnqueueLeft:
		return ErrLeft
	case scripts.OtherKind:
		if len(arr) < 2 {
			return ErrMalformed
		}
		return KindError(arr[1], "")
	default:
		return ErrMalformed
	}
	return nil
}

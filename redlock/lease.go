package redlock

import (
	"context"
	"time"

	"github.com/redlockgo/redlock/internal/scripts"
)

// extendOn runs l's extend script on node i and returns its code.
func (l *Lock) extendOn(ctx context.Context, i int, ttl time.Duration) (int64, error) {
	return l.kind.extend(ctx, l.c, i, l.token, ttl)
}

// healOn sets l again on node i, where it is missing: exactly its place,
// never over another owner.
func (l *Lock) healOn(ctx context.Context, i int, ttl time.Duration) (bool, error) {
	var t nodeTake
	return l.kind.take(ctx, l.c, i, l.token, ttl, true, nodeWatch{}, &t)
}

// raiseFenceOn is phase 2 of fencing on node i: see raiseFence.
func (l *Lock) raiseFenceOn(ctx context.Context, i int, fence string) (bool, error) {
	return l.kind.raiseFence(ctx, l.c, i, l.token, fence)
}

// parseTake reads a take script's reply {1, [place,] counter} or {0, ...}.
func parseTake(v any, withPlace bool, t *nodeTake) (bool, error) {
	ok, place, counter, err := parseTakeReply(v, withPlace)
	t.place, t.counter = place, counter
	return ok, err
}

// takeRefusal is the error of a take script's reply that refuses for
// what the key holds: {OtherKind, kind} (another kind of lock) or
// {TakeDelayed, pttl} (the lock-delay); nil for any other reply.
func takeRefusal(arr []any) error {
	switch {
	case len(arr) < 2:
	case asInt(arr[0]) == scripts.OtherKind:
		return kindError(arr[1], "")
	case asInt(arr[0]) == scripts.TakeDelayed:
		return delayError(time.Duration(max(asInt(arr[1]), 0)) * time.Millisecond)
	}
	return nil
}

func parseTakeReply(v any, withPlace bool) (ok bool, place string, counter uint64, err error) {
	arr, _ := v.([]any)
	if len(arr) == 0 {
		return false, "", 0, errMalformed
	}
	if err := takeRefusal(arr); err != nil {
		return false, "", 0, err
	}
	if asInt(arr[0]) != 1 {
		return false, "", 0, nil
	}
	if withPlace {
		if len(arr) < 3 {
			return false, "", 0, errMalformed
		}
		place, _ = arr[1].(string)
		arr = arr[1:]
	}
	if len(arr) < 2 {
		return false, "", 0, errMalformed
	}
	if counter, err = parseCounter(arr[1], ""); err != nil {
		return false, "", 0, err
	}
	return true, place, counter, nil
}

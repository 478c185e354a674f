package redlock

import (
	"context"
	"fmt"
	"strconv"
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

func parseTakeReply(v any, withPlace bool) (ok bool, place string, counter uint64, err error) {
	arr, _ := v.([]any)
	if len(arr) == 0 {
		return false, "", 0, errMalformed
	}
	switch {
	case asInt(arr[0]) == scripts.OtherKind && len(arr) > 1:
		return false, "", 0, kindError(arr[1], "")
	case asInt(arr[0]) == scripts.TakeDelayed && len(arr) > 1:
		return false, "", 0, delayError(time.Duration(max(asInt(arr[1]), 0)) * time.Millisecond)
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
	s, _ := arr[1].(string)
	counter, err = strconv.ParseUint(s, 10, 64)
	if err != nil {
		// The lease is ours but the counter is unusable: report the node as
		// failed, so the attempt's cleanup releases it.
		return false, "", 0, fmt.Errorf("redlock: fence counter is not a number: %q", s)
	}
	return true, place, counter, nil
}

package redlock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/internal/redistest"
)

// nodeCallBound bounds a wait for node calls still on their way: those of
// an operation that returned at a majority, or a waiter's first round.
// Each call ends within the node timeout newClient sets (1s), landed or
// abandoned; five of them, for a loaded machine. A bound on a wait for a
// state costs time only when the state never comes (docs/testing.md).
const nodeCallBound = 5 * time.Second

// awaitState is redistest.WaitFor for a cond that tells only whether the
// awaited state holds; seen says, on a failure, what there was instead.
func awaitState(t testing.TB, bound time.Duration, what string, cond func() bool, seen func() string) {
	t.Helper()
	redistest.WaitFor(t, bound, what, func() (bool, string) {
		if cond() {
			return true, ""
		}
		return false, seen()
	})
}

// onServers describes keys on each server (see onNodes).
func onServers(servers []*redistest.Server, keys ...string) func() string {
	return func() string {
		out := make([]string, len(servers))
		for i, s := range servers {
			c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
			out[i] = fmt.Sprintf("node %d: %s", i, describe(c, keys))
			_ = c.Close()
		}
		return strings.Join(out, "; ")
	}
}

// onNodes describes keys on each node: absent, a string's value, or a
// sorted set's or hash's contents, with the key's PTTL.
func onNodes(nodes []*redis.Client, keys ...string) func() string {
	return func() string {
		out := make([]string, len(nodes))
		for i, c := range nodes {
			out[i] = fmt.Sprintf("node %d: %s", i, describe(c, keys))
		}
		return strings.Join(out, "; ")
	}
}

func describe(c *redis.Client, keys []string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var out []string
	for _, k := range keys {
		typ, err := c.Type(ctx, k).Result()
		var v any
		switch {
		case err != nil:
			v = err
		case typ == "none":
			out = append(out, k+" absent")
			continue
		case typ == "string":
			v, err = c.Get(ctx, k).Result()
		case typ == "zset":
			v, err = c.ZRangeWithScores(ctx, k, 0, -1).Result()
		case typ == "hash":
			v, err = c.HGetAll(ctx, k).Result()
		default:
			v = typ
		}
		if err != nil {
			v = err
		}
		out = append(out, fmt.Sprintf("%s=%v (PTTL %v)", k, v, c.PTTL(ctx, k).Val()))
	}
	return strings.Join(out, ", ")
}

// onFakes describes every key on the fake nodes.
func onFakes(fn *fakeNodes) func() string {
	return func() string {
		out := make([]string, len(fn.servers))
		for i, s := range fn.servers {
			out[i] = fmt.Sprintf("node %d: %s", i, strings.TrimSpace(s.Dump()))
		}
		return strings.Join(out, "; ")
	}
}

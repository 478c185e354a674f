package redistest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/internal/keyspace"
)

// Untimed returns the keys of the node rc that have no TTL and are none of
// the keys the library keeps without one on purpose (keyspace.Lasting), in
// the order SCAN gives them. It reads the whole keyspace (SCAN, then PTTL
// of each key), so it is for a test's end, not a busy node.
func Untimed(ctx context.Context, rc *redis.Client) ([]string, error) {
	var out []string
	iter := rc.Scan(ctx, 0, "*", 1000).Iterator()
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		cmds := make([]*redis.DurationCmd, len(batch))
		_, err := rc.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range batch {
				cmds[i] = p.PTTL(ctx, k)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i, k := range batch {
			// go-redis reads PTTL's -1 (no TTL) as -1ns; -2 (gone since
			// SCAN) as -2ns.
			if cmds[i].Val() == -1 && !keyspace.Lasting(k) {
				out = append(out, k)
			}
		}
		batch = batch[:0]
		return nil
	}
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == 100 {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return nil, err
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// ByShape counts keys by keyspace.Shape and writes the counts as
// "shape: n (e.g. key)", one per shape, the commonest first.
func ByShape(keys []string) string {
	count, example := map[string]int{}, map[string]string{}
	for _, k := range keys {
		s := keyspace.Shape(k)
		count[s]++
		if _, ok := example[s]; !ok {
			example[s] = k
		}
	}
	shapes := slices.SortedFunc(maps.Keys(count), func(a, b string) int {
		if count[a] != count[b] {
			return count[b] - count[a]
		}
		return strings.Compare(a, b)
	})
	lines := make([]string, len(shapes))
	for i, s := range shapes {
		lines[i] = fmt.Sprintf("%s: %d (e.g. %q)", s, count[s], example[s])
	}
	return strings.Join(lines, "; ")
}

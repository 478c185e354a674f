package chaos

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/examples/fencedstore"
)

// storeTimeout bounds each call to the store. The store is never faulted; a
// call that takes this long is a symptom of an overloaded machine.
const storeTimeout = 5 * time.Second

// store holds the counters the locks protect, on a Redis the nemesis never
// touches. Workers update a counter with a read, a pause and a write, each a
// separate command: only the lock keeps two increments from interleaving.
type store interface {
	// read returns the key's counter (0 when unset).
	read(ctx context.Context, key string) (int64, error)
	// write sets the key's counter to v, under the lock's fence (0 without
	// fencing).
	write(ctx context.Context, key string, v int64, fence uint64) Outcome
}

// counterKey is where the store keeps the counter of a lock key.
func counterKey(key string) string { return "counter:" + key }

// plainStore is a counter with no protection of its own: GET, then SET.
type plainStore struct{ rdb *redis.Client }

func (s plainStore) read(ctx context.Context, key string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	return parseCounter(s.rdb.Get(ctx, counterKey(key)).Result())
}

func (s plainStore) write(ctx context.Context, key string, v int64, _ uint64) Outcome {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := s.rdb.Set(ctx, counterKey(key), v, 0).Err(); err != nil {
		return Unknown
	}
	return Committed
}

// fencedStore is the counter behind examples/fencedstore: a write with a
// fence below the highest one accepted for the key is refused.
type fencedStore struct{ s *fencedstore.Store }

func (s fencedStore) read(ctx context.Context, key string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	v, _, err := s.s.Read(ctx, counterKey(key))
	return parseCounter(v, err)
}

func (s fencedStore) write(ctx context.Context, key string, v int64, fence uint64) Outcome {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	err := s.s.Write(ctx, counterKey(key), strconv.FormatInt(v, 10), fence)
	switch {
	case err == nil:
		return Committed
	case errors.Is(err, fencedstore.ErrStaleFence):
		return Rejected
	}
	return Unknown
}

// finalCounters reads every key's counter once the run is over.
func finalCounters(ctx context.Context, s store, keys []string) (map[string]int64, error) {
	out := make(map[string]int64, len(keys))
	for _, k := range keys {
		v, err := s.read(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("chaos: final counter of %s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

func parseCounter(s string, err error) (int64, error) {
	if errors.Is(err, redis.Nil) || err == nil && s == "" {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, 64)
}

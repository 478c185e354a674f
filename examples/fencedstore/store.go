// Package fencedstore is an example of a resource protected by fencing
// tokens: a key-value store on Redis that accepts a write only when its fence
// is at least the highest fence it has accepted for that key, atomically.
//
// A lock alone cannot stop a holder that was paused past its validity (a GC
// pause, a SIGSTOP, a slow disk) from writing after another client took the
// lock. The resource must check: with redlock.WithFencing every acquisition
// carries Lock.Fence(), strictly greater than every earlier one, and this
// store rejects the stale writer. See docs/fencing.md.
package fencedstore

import (
	"context"
	_ "embed"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// ErrStaleFence means a write carried a fence lower than one already accepted.
var ErrStaleFence = errors.New("fencedstore: stale fence")

//go:embed write.lua
var writeSrc string

var writeScript = redis.NewScript(writeSrc)

// Store keeps values and, beside each, the highest fence that wrote it.
// It is safe for concurrent use.
type Store struct {
	rdb redis.UniversalClient
}

// New returns a Store on the given Redis client, which the caller owns.
func New(rdb redis.UniversalClient) *Store { return &Store{rdb: rdb} }

// Write sets key to value if fence is at least the highest fence accepted for
// key; otherwise it changes nothing and returns ErrStaleFence.
func (s *Store) Write(ctx context.Context, key, value string, fence uint64) error {
	ok, err := writeScript.Run(ctx, s.rdb, []string{key, key + ":maxfence"}, value, strconv.FormatUint(fence, 10)).Int()
	if err != nil {
		return err
	}
	if ok != 1 {
		return ErrStaleFence
	}
	return nil
}

// Read returns the value of key and the fence that wrote it.
func (s *Store) Read(ctx context.Context, key string) (string, uint64, error) {
	vals, err := s.rdb.MGet(ctx, key, key+":maxfence").Result()
	if err != nil {
		return "", 0, err
	}
	v, _ := vals[0].(string)
	f, _ := vals[1].(string)
	n, _ := strconv.ParseUint(f, 10, 64)
	return v, n, nil
}

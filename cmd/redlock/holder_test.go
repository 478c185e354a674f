package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// expiryJitter allows for the milliseconds between two PTTL reads, and
// Redis's rounding: the record expires with the lock, within this.
const expiryJitter = 5 * time.Millisecond

// The holder record's scripts, in-process, on real redis-server processes.
func TestHolderRecord(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	ctx := context.Background()
	key := keyFor(t)
	l := nodes.hold(t, key, time.Minute)
	defer l.Unlock(ctx)
	pools := nodes.pools(t)

	// Someone else's keys under the record's name are never touched: a
	// string that is not a record on node 0, a hash on node 1.
	c0, c1 := nodes.servers[0].Client(t), nodes.servers[1].Client(t)
	require.NoError(t, c0.Set(ctx, holderKey(key), "someone's token", time.Minute).Err())
	require.NoError(t, c1.HSet(ctx, holderKey(key), "f", "v").Err())

	rec := newHolderRecord(key, l.Token(), []string{"/usr/local/bin/deploy", "--password=hunter2"}, pools, time.Second)
	rec.write(ctx)
	assert.Equal(t, "someone's token", c0.Get(ctx, holderKey(key)).Val())
	assert.Equal(t, "v", c1.HGet(ctx, holderKey(key), "f").Val())

	c2 := nodes.servers[2].Client(t)
	h, ok := parseHolder(c2.Get(ctx, holderKey(key)).Val())
	require.True(t, ok, "a record on node 2")
	assert.Equal(t, l.Token(), h.Token)
	assert.Equal(t, os.Getpid(), h.PID)
	assert.Equal(t, "deploy", h.Command, "the command's name only, never its arguments")
	assert.WithinDuration(t, time.Now(), h.Since, 2*time.Second)
	lockTTL, recordTTL := c2.PTTL(ctx, key).Val(), c2.PTTL(ctx, holderKey(key)).Val()
	assert.True(t, recordTTL > 0 && recordTTL <= lockTTL+expiryJitter, "record TTL %v, lock TTL %v", recordTTL, lockTTL)
	assert.Equal(t, []string{l.Token(), l.Token(), l.Token()}, nodes.values(t, key), "the lock key is unchanged")

	// status reads past the foreign keys, and finds the record on node 2.
	code, out, stderr := status(t, "--nodes", nodes.urls, "--key", key)
	require.Equal(t, exitOK, code, "stderr: %s", stderr)
	assert.Contains(t, out, "holder: pid ")
	assert.Contains(t, out, `running "deploy"`)

	// Another token writes no record and removes none.
	other := newHolderRecord(key, "not-the-token", []string{"x"}, pools, time.Second)
	other.write(ctx)
	other.remove(ctx)
	assert.Equal(t, rec.record, c2.Get(ctx, holderKey(key)).Val())

	rec.remove(ctx)
	assert.Zero(t, c2.Exists(ctx, holderKey(key)).Val(), "removed")
	assert.Equal(t, "someone's token", c0.Get(ctx, holderKey(key)).Val())
	assert.Equal(t, "v", c1.HGet(ctx, holderKey(key), "f").Val())
	code, out, _ = status(t, "--nodes", nodes.urls, "--key", key)
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "holder: unknown: no record")
}

// A record whose token no longer holds the lock is not shown.
func TestHolderRecordOfAnotherToken(t *testing.T) {
	t.Parallel()
	states := []nodeState{
		{Node: 0, Held: true, Token: "new", Record: `{"token":"old","host":"h","pid":1}`},
		{Node: 1, Held: true, Token: "new", Record: `not a record`},
	}
	_, ok := recordFor(states, "new")
	assert.False(t, ok)
	states[1].Record = `{"token":"new","host":"h","pid":2}`
	h, ok := recordFor(states, "new")
	require.True(t, ok)
	assert.Equal(t, 2, h.PID)
}

// The holder record lives under the library's reserved prefix: a lock
// named as the record once was ("KEY:holder") is an ordinary key of the
// caller's, free while the CLI holds KEY and writes its record.
func TestHolderRecordIsNoCallersKey(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	ctx := context.Background()
	key := keyFor(t)
	l := nodes.hold(t, key, time.Minute)
	defer l.Unlock(ctx)
	rec := newHolderRecord(key, l.Token(), []string{"nightly"}, nodes.pools(t), time.Second)
	rec.write(ctx)
	defer rec.remove(ctx)
	require.Equal(t, 3, int(nodes.servers[0].Client(t).Exists(ctx, holderKey(key)).Val()+
		nodes.servers[1].Client(t).Exists(ctx, holderKey(key)).Val()+nodes.servers[2].Client(t).Exists(ctx, holderKey(key)).Val()),
		"the record is written on every node")

	c := nodes.client(t)
	st, err := c.Status(ctx, key+":holder")
	require.NoError(t, err)
	assert.False(t, st.Held, "the caller's key %q is free: %+v", key+":holder", st)
	other, err := c.TryLock(ctx, key+":holder", time.Minute)
	require.NoError(t, err, "the caller's key %q", key+":holder")
	require.NoError(t, other.Unlock(ctx))
}

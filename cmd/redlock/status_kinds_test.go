package main

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/redlock"
)

// "redlock status" on keys that hold readers, permits, or a key of the
// application's, on real redis-server processes.

// eachNodeHas waits until count(node) is n on every node: the library
// returns at a majority, a straggler's write may land a moment later.
func (tn *testNodes) eachNodeHas(t *testing.T, n int64, what string, count func(i int) int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		for i := range tn.servers {
			if count(i) != n {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "%d %s on every node", n, what)
}

func TestStatusReaders(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	ctx := context.Background()
	c := nodes.client(t)
	for range 2 {
		r, err := c.TryRLock(ctx, key, time.Minute)
		require.NoError(t, err)
		defer r.Unlock(ctx)
	}
	nodes.eachNodeHas(t, 2, "readers", func(i int) int64 {
		return nodes.servers[i].Client(t).ZCard(ctx, keyspace.Standalone{}.Readers(key)).Val()
	})

	code, out, stderr := status(t, "--nodes", nodes.urls, "--key", key)
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", out, stderr)
	assert.Contains(t, out, `readers "`+key+`" on 3 nodes (held while 2 have a live reader)`)
	for _, s := range nodes.servers {
		assert.Regexp(t, `\sheld\s+readers\s+-\s+\S+s\n$`, lineFor(t, out, s.Addr()))
	}
	assert.Contains(t, out, "\nreaders: 2 on each of 3 nodes\n")
	assert.Contains(t, out, "\nsummary: held by readers on 3 of 3 nodes (2 needed)\n")
	assert.NotContains(t, out, "holder:", "readers have no holder record")

	// Gone from one node: still held, by a majority.
	require.NoError(t, nodes.servers[2].Client(t).Del(ctx, key, keyspace.Standalone{}.Readers(key)).Err())
	code, out, _ = status(t, "--nodes", nodes.urls, "--key", key)
	require.Equal(t, exitOK, code, out)
	assert.Contains(t, lineFor(t, out, nodes.servers[2].Addr()), "free")
	assert.Contains(t, out, "\nreaders: 2 on node 0, 2 on node 1, 0 on node 2\n")
	assert.Contains(t, out, "\nsummary: held by readers on 2 of 3 nodes (2 needed)\n")
}

// The case of issue 29: a held permit key read as "on 0 of 3 nodes".
func TestStatusPermits(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	ctx := context.Background()
	c := nodes.client(t)
	for range 2 {
		p, err := c.TryAcquirePermit(ctx, key, 3, time.Minute)
		require.NoError(t, err)
		defer p.Unlock(ctx)
	}
	nodes.eachNodeHas(t, 2, "permits", func(i int) int64 {
		return nodes.servers[i].Client(t).HLen(ctx, key).Val()
	})

	code, out, stderr := status(t, "--nodes", nodes.urls, "--key", key)
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", out, stderr)
	assert.Contains(t, out, `permits "`+key+`" on 3 nodes (held while 2 have a live permit)`)
	for _, s := range nodes.servers {
		assert.Regexp(t, `\sheld\s+permits\s+-\s+\S+s\n$`, lineFor(t, out, s.Addr()))
	}
	assert.Contains(t, out, "\npermits: 2 on each of 3 nodes\n")
	assert.Contains(t, out, "\nsummary: held by permits on 3 of 3 nodes (2 needed)\n")
	assert.NotContains(t, out, "holder:")
}

// Permits live on a minority are neither held nor free; a semaphore whose
// permits have all expired, the key not yet, is on its node but holds
// nothing.
func TestStatusPermitsOnAMinority(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	ctx := context.Background()
	c0, c1 := nodes.servers[0].Client(t), nodes.servers[1].Client(t)
	expiry := func(d time.Duration) string { return "tok " + strconv.FormatInt(time.Now().Add(d).UnixMilli(), 10) }
	require.NoError(t, c0.HSet(ctx, key, "0", expiry(time.Minute)).Err())
	require.NoError(t, c0.PExpire(ctx, key, time.Minute).Err())
	require.NoError(t, c1.HSet(ctx, key, "0", expiry(-time.Minute)).Err())
	require.NoError(t, c1.PExpire(ctx, key, time.Minute).Err())

	code, out, _ := status(t, "--nodes", nodes.urls, "--key", key)
	require.Equal(t, exitNeither, code, out)
	assert.Regexp(t, `\sheld\s+permits\s`, lineFor(t, out, nodes.servers[0].Addr()))
	assert.Regexp(t, `\sexpired\s+permits\s`, lineFor(t, out, nodes.servers[1].Addr()))
	assert.Contains(t, lineFor(t, out, nodes.servers[2].Addr()), "free")
	assert.Contains(t, out, "\npermits: 1 on node 0, 0 on node 1, 0 on node 2\n")
	assert.Contains(t, out, "\nsummary: not held: a live permit on 1 of 3 nodes, not a majority (2 needed)\n")
}

// A key the application made, of another Redis type, is no lock: neither
// held nor free, and status says what it is.
func TestStatusKeyOfAnotherType(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	ctx := context.Background()
	for _, s := range nodes.servers {
		require.NoError(t, s.Client(t).RPush(ctx, key, "job").Err())
	}
	code, out, stderr := status(t, "--nodes", nodes.urls, "--key", key)
	require.Equal(t, exitNeither, code, "stdout: %s\nstderr: %s", out, stderr)
	assert.Contains(t, out, `key "`+key+`" on 3 nodes (a Redis list: not a lock, readers or permits)`)
	for _, s := range nodes.servers {
		assert.Regexp(t, `\sforeign\s+list\s+-\s+no expiry\n$`, lineFor(t, out, s.Addr()))
	}
	assert.Contains(t, out, "\nsummary: not held: the key is a Redis list on 3 of 3 nodes, not a lock, readers or permits\n")
	assert.Empty(t, stderr)
}

// replyErr is an error reply of a node (redis.Error): the node answered.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// showStatus on what the library could report, for the cases real nodes
// do not easily make: kinds that differ between nodes, error replies.
func TestShowStatusVerdicts(t *testing.T) {
	t.Parallel()
	lock := func(token string) redlock.NodeStatus {
		return redlock.NodeStatus{Kind: kindLock, Token: token, Leases: 1, TTL: time.Minute}
	}
	permits := redlock.NodeStatus{Kind: kindPermits, Leases: 2, TTL: time.Minute}
	down := redlock.NodeStatus{Err: errors.New("dial tcp 10.0.0.9:6379: connect: connection refused")}
	noperm := redlock.NodeStatus{Err: replyErr("NOPERM this user has no permissions to run the 'evalsha' command")}
	oom := redlock.NodeStatus{Err: replyErr("OOM command not allowed when used memory > 'maxmemory'.")}
	quarantined := redlock.NodeStatus{Quarantined: time.Hour}
	for _, tc := range []struct {
		name    string
		st      redlock.KeyStatus
		code    int
		summary string
		who     bool // whether the holder record is looked up
	}{
		{
			name: "lock, and permits on one node",
			st: redlock.KeyStatus{Kind: kindLock, Held: true, Token: "t", Holders: 2,
				Nodes: []redlock.NodeStatus{lock("t"), permits, lock("t")}},
			code: exitOK, who: true,
			summary: "summary: held on 2 of 3 nodes (2 needed); also permits on 1 node",
		},
		{
			name: "permits, and a lock on one node",
			st: redlock.KeyStatus{Kind: kindPermits, Held: true, Holders: 2,
				Nodes: []redlock.NodeStatus{permits, lock("t"), permits}},
			code:    exitOK,
			summary: "summary: held by permits on 2 of 3 nodes (2 needed); also a lock on 1 node",
		},
		{
			// A refused permission is the operator's to fix, as a node
			// down is: no lock can be taken.
			name:    "permission refused on a majority",
			st:      redlock.KeyStatus{Nodes: []redlock.NodeStatus{noperm, {}, noperm}},
			code:    exitUnavailable,
			summary: "summary: unavailable: 1 of 3 nodes count now, 2 needed (2 refused the credentials)",
		},
		{
			name:    "error replies on a majority",
			st:      redlock.KeyStatus{Nodes: []redlock.NodeStatus{oom, {}, oom}},
			code:    exitNeither,
			summary: "summary: not known: the key is on none of the nodes that answered, but 2 of 3 answered with an error (2 needed)",
		},
		{
			name:    "a majority quarantined",
			st:      redlock.KeyStatus{Nodes: []redlock.NodeStatus{quarantined, {}, quarantined}},
			code:    exitUnavailable,
			summary: "summary: unavailable: 1 of 3 nodes count now, 2 needed (2 quarantined after a restart)",
		},
		{
			name:    "a majority down",
			st:      redlock.KeyStatus{Kind: kindLock, Token: "t", Holders: 1, Nodes: []redlock.NodeStatus{down, lock("t"), down}},
			code:    exitUnavailable,
			summary: "summary: unknown: 1 of 3 nodes answered, 2 needed",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.st.Key, tc.st.Total, tc.st.Needed = "k", len(tc.st.Nodes), len(tc.st.Nodes)/2+1
			for i := range tc.st.Nodes {
				tc.st.Nodes[i].Node, tc.st.Nodes[i].Addr = i, "10.0.0."+strconv.Itoa(i)+":6379"
			}
			var stdout, stderr bytes.Buffer
			asked := false
			code := showStatus(&stdout, &stderr, tc.st, func() (holder, bool) { asked = true; return holder{}, false })
			assert.Equal(t, tc.code, code)
			assert.Contains(t, stdout.String(), "\n"+tc.summary+"\n")
			assert.Equal(t, tc.who, asked, "the holder record is read for a held lock only")

			// --json: the same verdict, exit code and summary, a row per node.
			stdout.Reset()
			stderr.Reset()
			asked = false
			code = showStatusJSON(&stdout, &stderr, tc.st, func() (holder, bool) { asked = true; return holder{}, false })
			assert.Equal(t, tc.code, code, "--json")
			assert.Equal(t, tc.who, asked, "--json: the holder record is read for a held lock only")
			got := decodeStatusJSON(t, stdout.String())
			assert.Equal(t, strings.TrimPrefix(tc.summary, "summary: "), got.Summary)
			require.Len(t, got.Nodes, len(tc.st.Nodes))
			for i, n := range tc.st.Nodes {
				assert.Equal(t, rowOf(n).state, got.Nodes[i].State, "node %d", i)
				assert.Equal(t, n.Err != nil, got.Nodes[i].Error != "", "node %d: error", i)
			}
		})
	}
}

func TestStatusKeyReservedForAWaitingLockAllIsFree(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	other := key + ":other"
	ctx := context.Background()
	held := nodes.hold(t, other, time.Minute)
	defer held.Unlock(ctx)

	// A LockAll heads the queue of key, free, and reserves it while the
	// other key is held.
	c := nodes.client(t)
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if l, err := c.LockAll(mctx, []string{key, other}, time.Minute, redlock.WithRetry(redlock.ConstantBackoff(time.Hour))); err == nil {
			_ = l.Unlock(ctx)
		}
	}()
	defer func() { cancel(); <-done }()
	nodes.eachNodeHas(t, 1, "reservations", func(i int) int64 {
		if strings.HasPrefix(nodes.servers[i].Client(t).Get(ctx, key).Val(), "q:") {
			return 1
		}
		return 0
	})

	code, out, stderr := status(t, "--nodes", nodes.urls, "--key", key)
	require.Equal(t, exitFree, code, "stdout: %s\nstderr: %s", out, stderr)
	for _, s := range nodes.servers {
		assert.Regexp(t, `\sreserved\s+-\s+-\s+\S+s\n$`, lineFor(t, out, s.Addr()))
	}
	assert.Contains(t, out, "\nsummary: free; reserved for a waiting LockAll on 3 nodes\n")
	assert.NotContains(t, out, "holder:")
}

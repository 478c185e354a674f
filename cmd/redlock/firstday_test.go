package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
)

// nodesCmd runs "redlock nodes ARGS" in process.
func nodesCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := nodesMain(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// urlsOf joins the servers' URLs, each with prefix before its host
// (":secret@" for a password).
func urlsOf(servers []*redistest.Server, auth string) string {
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = "redis://" + auth + s.Addr()
	}
	return strings.Join(urls, ",")
}

// A deployment's first day on stock nodes (no persistence, no
// declaration): run, status and leader exit 69 and point to nodes check,
// which names the quarantine; after nodes declare-fresh, run takes the lock.
func TestFirstDay(t *testing.T) {
	t.Parallel()
	servers := redistest.StartNUndeclared(t, 3, redistest.NoPersistence)
	urls := urlsOf(servers, "")
	key := keyFor(t)

	// A short TTL: the refused attempt raises the nodes' lease ceilings for
	// three of them (acquire.lua), and declare-fresh waits for that below.
	p := run(t, "run", "--nodes", urls, "--key", key, "--ttl", "100ms", "--", "echo", "ran")
	require.Equal(t, exitUnavailable, p.code, "stderr: %s", p.stderr)
	assert.Empty(t, p.stdout.String(), "the command ran without the lock")
	assert.Contains(t, p.stderr.String(), "node quarantined after a restart")
	assert.Contains(t, p.stderr.String(), "redlock run: "+checkHint)

	code, out, stderr := status(t, "--nodes", urls, "--key", key)
	require.Equal(t, exitUnavailable, code, "stdout: %s\nstderr: %s", out, stderr)
	for _, s := range servers {
		assert.Regexp(t, `node \d \(`+s.Addr()+`\): quarantined after a restart: does not count for (1m)?\d+s more`, out)
	}
	assert.Contains(t, out, "summary: unavailable: 0 of 3 nodes count now, 2 needed (3 quarantined after a restart)")
	assert.Contains(t, stderr, "redlock status: "+checkHint)

	code, st, raw := statusJSONOf(t, "--nodes", urls, "--key", key)
	require.Equal(t, exitUnavailable, code, raw)
	assert.Equal(t, "unavailable", st.Verdict)
	for _, n := range st.Nodes {
		assert.Positive(t, n.QuarantinedMillis, "node %d", n.Node)
	}

	code, _, stderr = leader(t, "--nodes", urls, "--election", "first-day")
	require.Equal(t, exitUnavailable, code, "stderr: %s", stderr)
	assert.Contains(t, stderr, "3 quarantined after a restart")
	assert.Contains(t, stderr, checkHint)

	code, out, stderr = nodesCmd(t, "check", "--nodes", urls)
	require.Equal(t, exitUnavailable, code, "stdout: %s\nstderr: %s", out, stderr)
	assert.Contains(t, out, "persistence partial, no fresh-start declaration")
	assert.Contains(t, out, "summary: 0 of 3 nodes count now, 2 needed")
	assert.Contains(t, stderr, "configure appendonly yes + appendfsync always, or run `redlock nodes declare-fresh` on a new deployment")

	// declare-fresh refuses while a ceiling lives: for all it can tell, a
	// lease the ceiling covers may still be valid.
	redistest.WaitFor(t, 10*time.Second, "the refused attempt's lease ceilings to expire", func() (bool, string) {
		for i, s := range servers {
			if n := s.Client(t).Exists(context.Background(), "redlock:ceiling").Val(); n != 0 {
				return false, fmt.Sprintf("node %d keeps its ceiling", i)
			}
		}
		return true, ""
	})
	code, out, stderr = nodesCmd(t, "declare-fresh", "--nodes", urls)
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", out, stderr)
	for _, s := range servers {
		id := s.Client(t).Get(context.Background(), pool.FreshStartKey).Val()
		require.NotEmpty(t, id)
		assert.Contains(t, out, "("+s.Addr()+"): SET redlock:fresh-start "+id+"\n")
	}

	code, out, stderr = nodesCmd(t, "check", "--nodes", urls)
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", out, stderr)
	assert.Contains(t, out, "partial, declared fresh")
	assert.Contains(t, out, "summary: 3 of 3 nodes count now, 2 needed")

	// Declared again: the declaration of the same run is no obstacle. (Not
	// after the run below: its lease ceilings refuse it while they live.)
	code, _, stderr = nodesCmd(t, "declare-fresh", "--nodes", urls)
	require.Equal(t, exitOK, code, "stderr: %s", stderr)

	p = run(t, "run", "--nodes", urls, "--key", key, "--", "echo", "ran")
	require.Equal(t, 0, p.code, "stderr: %s", p.stderr)
	assert.Equal(t, "ran\n", p.stdout.String())
}

// nodes declare-fresh refuses a deployment one of whose nodes holds a key
// of the library's, and declares none of its nodes; a key of the
// application's is no obstacle.
func TestNodesDeclareFreshRefusesLibraryKeys(t *testing.T) {
	t.Parallel()
	servers := redistest.StartNUndeclared(t, 3, redistest.NoPersistence)
	urls := urlsOf(servers, "")
	ctx := context.Background()
	c := servers[1].Client(t)
	for _, tt := range []struct{ name, key, value string }{
		{"lock", "job", rand.Text()},
		{"companion", keyspace.Standalone{}.Fence("job"), "7"},
		{"election", mustElection(t, "scheduler"), "x"},
		{"earlier run's declaration", pool.FreshStartKey, "0123456789abcdef"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, c.FlushAll(ctx).Err())
			require.NoError(t, c.Set(ctx, "user:42", "hello", 0).Err())
			require.NoError(t, c.Set(ctx, "job:fence", "7", 0).Err()) // the application's, whatever its ending
			require.NoError(t, c.Set(ctx, tt.key, tt.value, time.Minute).Err())
			code, out, stderr := nodesCmd(t, "declare-fresh", "--nodes", urls)
			require.Equal(t, exitFailure, code, "stdout: %s\nstderr: %s", out, stderr)
			assert.Empty(t, out)
			assert.Contains(t, stderr, "node 1 ("+servers[1].Addr()+")")
			assert.Contains(t, stderr, `"`+tt.key+`"`)
			assert.Contains(t, stderr, "a restart, not a new node")
			assert.NotContains(t, stderr, "user:42")
			assert.NotContains(t, stderr, `"job:fence"`)
			for i, s := range servers {
				if i != 1 {
					assert.Zero(t, s.Client(t).Exists(ctx, pool.FreshStartKey).Val(), "node %d declared", i)
				}
			}
		})
	}
	// A permit hash, by any of its slots.
	require.NoError(t, c.FlushAll(ctx).Err())
	require.NoError(t, c.HSet(ctx, "pool-slots", "2", rand.Text()+" 123").Err())
	require.NoError(t, c.PExpire(ctx, "pool-slots", time.Minute).Err())
	code, _, stderr := nodesCmd(t, "declare-fresh", "--nodes", urls)
	require.Equal(t, exitFailure, code, "stderr: %s", stderr)
	assert.Contains(t, stderr, `"pool-slots"`)
}

// Nodes that refuse the URLs' credentials or the lock's scripts, a
// majority of them: every command exits 69 and names the cause.
func TestCredentialsRefused(t *testing.T) {
	t.Parallel()
	locked := redistest.StartNUndeclared(t, 2, redistest.AOFAlways, "--requirepass", "sekrit")
	// A user that may not run scripts, the lock's every command.
	scriptless := redistest.StartNUndeclared(t, 2, redistest.AOFAlways,
		"--user", "locker", "on", ">pw", "~*", "&*", "+@all", "-eval", "-evalsha")
	open := redistest.StartN(t, 1, redistest.AOFAlways)
	for _, tt := range []struct {
		name, auth, code string
		servers          []*redistest.Server
	}{
		{"no password", "", "NOAUTH", locked},
		{"wrong password", ":wrong@", "WRONGPASS", locked},
		{"no permission", "locker:pw@", "NOPERM", scriptless},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			urls := urlsOf(tt.servers, tt.auth) + "," + open[0].URL()
			key := keyFor(t)

			p := run(t, "run", "--nodes", urls, "--key", key, "--", "echo", "ran")
			require.Equal(t, exitUnavailable, p.code, "stderr: %s", p.stderr)
			assert.Empty(t, p.stdout.String())
			assert.Contains(t, p.stderr.String(), "redlock run: "+loginHint(tt.code))

			code, out, stderr := status(t, "--nodes", urls, "--key", key)
			require.Equal(t, exitUnavailable, code, "stdout: %s\nstderr: %s", out, stderr)
			assert.Contains(t, out, "2 refused the credentials")
			assert.Contains(t, stderr, "redlock status: "+loginHint(tt.code))

			code, _, stderr = leader(t, "--nodes", urls, "--election", "creds")
			require.Equal(t, exitUnavailable, code, "stderr: %s", stderr)
			assert.Contains(t, stderr, tt.code)

			code, out, stderr = nodesCmd(t, "check", "--nodes", urls)
			require.Equal(t, exitUnavailable, code, "stdout: %s\nstderr: %s", out, stderr)
			assert.Contains(t, out, "credentials refused: ")
			assert.Contains(t, out, tt.code) // for NOPERM, the pool's script probe names the command
			assert.Contains(t, stderr, loginHint(tt.code))

			if tt.code == "NOPERM" {
				return // INFO, SCAN and SET are allowed: declare-fresh works
			}
			code, _, stderr = nodesCmd(t, "declare-fresh", "--nodes", urls)
			require.Equal(t, exitUnavailable, code, "stderr: %s", stderr)
			assert.Contains(t, stderr, tt.code)
		})
	}
}

// nodes declare-fresh refuses while any node carries evidence of a lease
// that may be valid (issue 58): a multi-lock held on all five nodes, nodes
// 0-2 restarted empty. Nodes 3 and 4 keep the multi-lock's keys and their
// lease ceilings; the refusal names them, says when each ceiling expires,
// and declares no node.
func TestNodesDeclareFreshRefusesWhileALeaseMayLive(t *testing.T) {
	t.Parallel()
	tn := startNodes(t, 5)
	l, err := tn.client(t).TryLockAll(context.Background(), []string{"a", "b"}, time.Minute)
	require.NoError(t, err)
	// TryLockAll returns at the majority; the others' calls land within the
	// node timeout.
	all := []string{l.Token(), l.Token(), l.Token(), l.Token(), l.Token()}
	require.Eventually(t, func() bool { return slices.Equal(all, tn.values(t, "a")) }, 10*time.Second, 10*time.Millisecond,
		"the multi-lock on every node")
	for _, s := range tn.servers[:3] {
		s.Restart(t)
	}

	code, out, stderr := nodesCmd(t, "declare-fresh", "--nodes", tn.urls)
	require.Equal(t, exitFailure, code, "stdout: %s\nstderr: %s", out, stderr)
	assert.Empty(t, out)
	for _, s := range tn.servers[3:] {
		assert.Regexp(t, `node \d \(`+s.Addr()+`\): .*live redlock:ceiling \(leases of up to 1m0s\).* expires in `, stderr)
	}
	assert.Contains(t, stderr, "retry once every ceiling named has expired")
	for i, s := range tn.servers[:3] {
		assert.Zero(t, s.Client(t).Exists(context.Background(), pool.FreshStartKey).Val(), "node %d declared", i)
	}
}

// A quarantined node's copy of a key holds no lock that counts (issue
// 59): with the key on every node of a first day, run exits 69 (the nodes
// make no majority) naming the quarantine, not 75 (held by another), and
// status says unavailable, not held.
func TestFirstDayCopiesOnQuarantinedNodesAreNoHolders(t *testing.T) {
	t.Parallel()
	servers := redistest.StartNUndeclared(t, 3, redistest.NoPersistence)
	urls := urlsOf(servers, "")
	key := keyFor(t)
	for _, s := range servers {
		require.NoError(t, s.Client(t).Set(context.Background(), key, "someone", time.Minute).Err())
	}

	p := run(t, "run", "--nodes", urls, "--key", key, "--", "echo", "ran")
	require.Equal(t, exitUnavailable, p.code, "stderr: %s", p.stderr)
	assert.Empty(t, p.stdout.String(), "the command ran without the lock")
	assert.Contains(t, p.stderr.String(), "node quarantined after a restart")
	assert.NotContains(t, p.stderr.String(), "held by another owner on")

	code, out, stderr := status(t, "--nodes", urls, "--key", key)
	require.Equal(t, exitUnavailable, code, "stdout: %s\nstderr: %s", out, stderr)
	assert.NotContains(t, out, "summary: held on")
	assert.Contains(t, out, "summary: unavailable: 0 of 3 nodes count now, 2 needed (3 quarantined after a restart)")
}

// run refuses a --ttl above --max-ttl with what to set, before it calls
// any node; a --max-ttl that covers it takes the lock.
func TestRunTTLAboveMaxTTL(t *testing.T) {
	t.Parallel()
	servers := redistest.StartN(t, 3, redistest.NoPersistence)
	urls := urlsOf(servers, "")
	key := keyFor(t)

	p := run(t, "run", "--nodes", urls, "--key", key, "--ttl", "2m", "--", "echo", "ran")
	require.Equal(t, exitUsage, p.code, "stderr: %s", p.stderr)
	assert.Contains(t, p.stderr.String(), "--ttl 2m0s is longer than --max-ttl 1m0s: give --max-ttl 2m0s or more")
	assert.Empty(t, p.stdout.String())

	p = run(t, "run", "--nodes", urls, "--key", key, "--ttl", "2m", "--max-ttl", "2m", "--", "echo", "ran")
	require.Equal(t, exitOK, p.code, "stderr: %s", p.stderr)
	assert.Equal(t, "ran\n", p.stdout.String())
	recorded := 0 // on the majority that granted the lock at least (a straggler's call may end with the process)
	for _, s := range servers {
		if s.Client(t).Get(context.Background(), "redlock:max-ttl").Val() == "120000" {
			recorded++
		}
	}
	assert.GreaterOrEqual(t, recorded, 2, "the bound recorded on a majority")
}

// mustElection returns the lock key of the election called name
// (keyspace.Election).
func mustElection(t *testing.T, name string) string {
	t.Helper()
	k, err := keyspace.Election(name)
	require.NoError(t, err)
	return k
}

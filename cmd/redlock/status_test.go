package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// "redlock status", in-process, on real redis-server processes.

// status runs the command and returns its exit code and output.
func status(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := statusMain(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// lineFor returns the output line about the node at addr.
func lineFor(t *testing.T, out, addr string) string {
	t.Helper()
	for line := range strings.Lines(out) {
		if strings.Contains(line, " "+addr+" ") {
			return line
		}
	}
	t.Fatalf("no line for %s in:\n%s", addr, out)
	return ""
}

func TestStatusFree(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	code, out, stderr := status(t, "--nodes", nodes.urls, "--key", keyFor(t))
	require.Equal(t, exitFree, code, "stderr: %s", stderr)
	for _, s := range nodes.servers {
		assert.Contains(t, lineFor(t, out, s.Addr()), "free")
	}
	assert.Contains(t, out, "\nsummary: free\n")
	assert.NotContains(t, out, "held on")
	assert.NotContains(t, out, "holder:")
}

func TestStatusHeld(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	l := nodes.hold(t, key, time.Minute)
	defer l.Unlock(context.Background())

	code, out, stderr := status(t, "--nodes", nodes.urls, "--key", key)
	require.Equal(t, exitOK, code, "stderr: %s", stderr)
	for _, s := range nodes.servers {
		line := lineFor(t, out, s.Addr())
		assert.Regexp(t, `\sheld\s+lock\s`, line)
		assert.Contains(t, line, l.Token())
		f := strings.Fields(line)
		ttl, err := time.ParseDuration(f[len(f)-1])
		require.NoError(t, err, "TTL in %q", line)
		assert.True(t, ttl > 0 && ttl <= time.Minute, "TTL %v", ttl)
	}
	assert.Contains(t, out, "summary: held on 3 of 3 nodes (2 needed)\n")
	// Taken through the library, not by run: nobody recorded who.
	assert.Contains(t, out, "holder: unknown: no record")
}

func TestStatusSplitAndForeignKeys(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	ctx := context.Background()
	require.NoError(t, nodes.servers[0].Client(t).Set(ctx, key, "a", time.Minute).Err())
	require.NoError(t, nodes.servers[1].Client(t).Set(ctx, key, "b", 0).Err()) // no expiry: not a lock's doing
	code, out, _ := status(t, "--nodes", nodes.urls, "--key", key)
	require.Equal(t, exitNeither, code)
	assert.Contains(t, lineFor(t, out, nodes.servers[1].Addr()), "no expiry")
	assert.Contains(t, lineFor(t, out, nodes.servers[2].Addr()), "free")
	assert.Contains(t, out, "summary: not held: the key is on 2 of 3 nodes, but no token on a majority (2 needed); 2 different tokens")
	assert.NotContains(t, out, "holder:")
}

func TestStatusWithDeadNodes(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	l := nodes.hold(t, key, time.Minute)
	defer l.Unlock(context.Background())

	nodes.servers[2].Kill()
	code, out, stderr := status(t, "--nodes", nodes.urls, "--key", key)
	require.Equal(t, exitOK, code, "a majority still answers; stderr: %s", stderr)
	assert.Contains(t, lineFor(t, out, nodes.servers[2].Addr()), "unreachable")
	assert.Contains(t, out, "summary: held on 2 of 3 nodes (2 needed); 1 unreachable")

	nodes.servers[1].Kill()
	code, out, stderr = status(t, "--nodes", nodes.urls, "--key", key)
	require.Equal(t, exitUnavailable, code)
	assert.Contains(t, out, "summary: unknown: 1 of 3 nodes answered, 2 needed")
	assert.Contains(t, stderr, "2 of 3 nodes unreachable")
}

// A free key with a node down is still free: the node left cannot hold a
// lock alone.
func TestStatusFreeWithDeadNode(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	nodes.servers[0].Kill()
	code, out, _ := status(t, "--nodes", nodes.urls, "--key", keyFor(t))
	require.Equal(t, exitFree, code, out)
	assert.Contains(t, out, "summary: free; 1 unreachable")
}

// status shows who holds a lock taken by run, while the lock key keeps the
// bare token; the record follows the lock's extensions past its first TTL,
// and goes with the release.
func TestStatusShowsRunHolder(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	finish := t.TempDir() + "/finish"
	t.Cleanup(func() { _ = os.WriteFile(finish, nil, 0o644) }) // never leave the command behind
	const ttl = time.Second
	p := start(t, "", nil, "run", "--nodes", nodes.urls, "--key", key, "--ttl", ttl.String(), "--node-timeout", "200ms",
		"--", "sh", "-c", `echo started; while [ ! -e "$1" ]; do sleep 0.05; done`, "sh", finish)
	p.waitOutput(t, "started")
	begun := time.Now()
	host, err := os.Hostname()
	require.NoError(t, err)

	// Past two TTLs the record is still there: extensions rewrote it.
	for probes := 0; probes < 3 || time.Since(begun) < 2*ttl; probes++ {
		code, out, stderr := status(t, "--nodes", nodes.urls, "--key", key)
		require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", out, stderr)
		assert.Regexp(t, fmt.Sprintf(`\nholder: pid %d on %s since \S+ \(\d+s ago\), running "sh"\n`,
			p.cmd.Process.Pid, regexp.QuoteMeta(host)), out)
		// A node whose SET or extension timed out on a loaded machine may
		// lack the key: a majority holds it, and no node another token.
		values := nodes.values(t, key)
		token, held := "", 0
		for _, v := range values {
			if v != "" && (token == "" || v == token) {
				token, held = v, held+1
			}
		}
		assert.GreaterOrEqual(t, held, 2, "the lock key holds one token on a majority: %q", values)
		assert.Subset(t, []string{token, ""}, values, "no other token")
		assert.NotContains(t, token, "{", "the lock key holds the bare token")
		for i, s := range nodes.servers {
			if values[i] == "" {
				continue
			}
			// Both read at one instant (MULTI): an extension landing
			// between two reads showed a fresh record beside the lock's
			// older TTL (998ms against 666ms, in a loaded run).
			var lockPTTL, recordPTTL *redis.DurationCmd
			_, err := s.Client(t).TxPipelined(context.Background(), func(pipe redis.Pipeliner) error {
				lockPTTL, recordPTTL = pipe.PTTL(context.Background(), key), pipe.PTTL(context.Background(), holderKey(key))
				return nil
			})
			require.NoError(t, err)
			lockTTL, recordTTL := lockPTTL.Val(), recordPTTL.Val()
			assert.True(t, recordTTL > 0 && recordTTL <= lockTTL+expiryJitter, "the record expires with the lock: %v, lock %v", recordTTL, lockTTL)
		}
		time.Sleep(100 * time.Millisecond)
	}

	require.NoError(t, os.WriteFile(finish, nil, 0o644))
	require.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
	nodes.requireFree(t, key)
	code, out, _ := status(t, "--nodes", nodes.urls, "--key", key)
	require.Equal(t, exitFree, code, out)
}

// When run dies, the lock and its record expire together: status then
// reads "free".
func TestStatusFreeAfterHolderDies(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	finish := t.TempDir() + "/finish"
	t.Cleanup(func() { _ = os.WriteFile(finish, nil, 0o644) })
	p := start(t, "", nil, "run", "--nodes", nodes.urls, "--key", key, "--ttl", "1s", "--node-timeout", "200ms",
		"--", "sh", "-c", `echo started; while [ ! -e "$1" ]; do sleep 0.05; done`, "sh", finish)
	p.waitOutput(t, "started")
	require.Eventually(t, func() bool {
		code, _, _ := status(t, "--nodes", nodes.urls, "--key", key)
		return code == exitOK
	}, procTimeout, 10*time.Millisecond, "held while run runs")
	require.NoError(t, p.cmd.Process.Kill())
	<-p.exited

	var out string
	require.Eventually(t, func() bool {
		var code int
		code, out, _ = status(t, "--nodes", nodes.urls, "--key", key)
		return code == exitFree
	}, 10*time.Second, 50*time.Millisecond, "free once the TTL has passed")
	assert.Contains(t, out, "\nsummary: free\n")
	nodes.requireFree(t, key)
}

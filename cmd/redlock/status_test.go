package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

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
	require.Equal(t, exitOK, code, "stderr: %s", stderr)
	for _, s := range nodes.servers {
		assert.Contains(t, lineFor(t, out, s.Addr()), "free")
	}
	assert.Contains(t, out, "summary: held on 0 of 3 nodes, majority: no (2 needed)")
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
		assert.Contains(t, line, "held")
		assert.Contains(t, line, l.Token())
		f := strings.Fields(line)
		ttl, err := time.ParseDuration(f[len(f)-1])
		require.NoError(t, err, "TTL in %q", line)
		assert.True(t, ttl > 0 && ttl <= time.Minute, "TTL %v", ttl)
	}
	assert.Contains(t, out, "summary: held on 3 of 3 nodes, majority: yes (2 needed)")
}

func TestStatusSplitAndForeignKeys(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	ctx := context.Background()
	require.NoError(t, nodes.servers[0].Client(t).Set(ctx, key, "a", time.Minute).Err())
	require.NoError(t, nodes.servers[1].Client(t).Set(ctx, key, "b", 0).Err()) // no expiry: not a lock's doing
	code, out, _ := status(t, "--nodes", nodes.urls, "--key", key)
	require.Equal(t, exitOK, code)
	assert.Contains(t, lineFor(t, out, nodes.servers[1].Addr()), "no expiry")
	assert.Contains(t, lineFor(t, out, nodes.servers[2].Addr()), "free")
	assert.Contains(t, out, "summary: held on 1 of 3 nodes, majority: no (2 needed); 2 different tokens")
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
	assert.Contains(t, out, "summary: held on 2 of 3 nodes, majority: yes (2 needed); 1 unreachable")

	nodes.servers[1].Kill()
	code, out, stderr = status(t, "--nodes", nodes.urls, "--key", key)
	require.Equal(t, exitUnavailable, code)
	assert.Contains(t, out, "summary: held on 1 of 3 nodes, majority: no (2 needed); 2 unreachable")
	assert.Contains(t, stderr, "2 of 3 nodes unreachable")
}

package main

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --conflict-exit-code N: a lock held by another owner exits N instead of
// 75, trying once or waiting; the command does not run, and the message is
// the same.
func TestRunConflictExitCode(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	held := nodes.hold(t, key, time.Minute)
	defer held.Unlock(context.Background())

	for _, tt := range []struct {
		code int
		wait string
	}{{0, "0"}, {3, "0"}, {255, "300ms"}} {
		p := run(t, "run", "--nodes", nodes.urls, "--key", key, "--wait", tt.wait,
			"--conflict-exit-code", strconv.Itoa(tt.code), "--", "echo", "ran")
		require.Equal(t, tt.code, p.code, "--conflict-exit-code %d --wait %s: stderr: %s", tt.code, tt.wait, p.stderr)
		assert.Empty(t, p.stdout.String(), "the command ran without the lock")
		assert.Contains(t, p.stderr.String(), fmt.Sprintf("redlock: lock %q not obtained", key))
		assert.Contains(t, p.stderr.String(), "held by another owner on 3 of 3 nodes")
	}
	// The flag changes nothing when the lock is free.
	other := keyFor(t) + ":free"
	p := run(t, "run", "--nodes", nodes.urls, "--key", other, "--conflict-exit-code", "0", "--", "sh", "-c", "exit 7")
	require.Equal(t, 7, p.code, "the command's own code: stderr: %s", p.stderr)
	for _, v := range nodes.values(t, key) {
		assert.Equal(t, held.Token(), v, "the holder's lock was touched")
	}
}

// A refusal by the nodes is no conflict: nodes in the restart quarantine
// exit 69 (unavailable) with --conflict-exit-code 0, so that a job told to skip
// quietly when another host runs it does not skip, unseen, for a day.
func TestRunConflictExitCodeNotForQuarantine(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	for _, s := range nodes.servers {
		s.Restart(t)
	}
	p := run(t, "run", "--nodes", nodes.urls, "--key", keyFor(t), "--conflict-exit-code", "0", "--", "echo", "ran")
	require.Equal(t, exitUnavailable, p.code, "stderr: %s", p.stderr)
	assert.Empty(t, p.stdout.String(), "the command ran without the lock")
	assert.Contains(t, p.stderr.String(), "node quarantined after a restart")
}

// A key of another Redis type is no other owner either: run exits 75 with
// --conflict-exit-code 0, and says what the key is.
func TestRunConflictExitCodeNotForAnotherKind(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	for _, s := range nodes.servers {
		require.NoError(t, s.Client(t).RPush(context.Background(), key, "x").Err())
	}
	p := run(t, "run", "--nodes", nodes.urls, "--key", key, "--conflict-exit-code", "0", "--", "echo", "ran")
	require.Equal(t, exitTempFail, p.code, "stderr: %s", p.stderr)
	assert.Empty(t, p.stdout.String(), "the command ran without the lock")
	assert.Contains(t, p.stderr.String(), "list")
}

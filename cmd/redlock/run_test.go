package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

// "redlock run" on real redis-server processes, through the built binary.

func TestRunPassesStreamsAndExitCode(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	tests := []struct {
		name   string
		script string
		code   int
	}{
		{"success", "exit 0", 0},
		{"failure", "exit 7", 7},
		{"high code", "exit 255", 255},
		{"killed by a signal", "kill -KILL $$", 128 + 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := keyFor(t)
			p := start(t, "from stdin\n", nil, "run", "--nodes", nodes.urls, "--key", key, "--",
				"sh", "-c", "cat; echo to stdout; echo to stderr >&2; "+tt.script)
			require.Equal(t, tt.code, p.wait(t), "stderr: %s", p.stderr)
			assert.Equal(t, "from stdin\nto stdout\n", p.stdout.String())
			assert.Equal(t, "to stderr\n", p.stderr.String())
			nodes.requireFree(t, key)
		})
	}
}

func TestRunNodesFromEnvironment(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	p := start(t, "", []string{nodesEnv + "=" + nodes.urls}, "run", "--key", keyFor(t), "--", "echo", "ran")
	require.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
	assert.Equal(t, "ran\n", p.stdout.String())
}

// A bare host:port is a redis:// URL, in --nodes and in REDLOCK_NODES.
func TestRunBareHostPort(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	addrs := make([]string, len(nodes.servers))
	for i, s := range nodes.servers {
		addrs[i] = s.Addr()
	}
	bare := strings.Join(addrs, ",")
	for _, env := range [][]string{nil, {nodesEnv + "=" + bare}} {
		args := []string{"run", "--key", keyFor(t), "--", "echo", "ran"}
		if env == nil {
			args = append([]string{"run", "--nodes", bare}, args[1:]...)
		}
		p := start(t, "", env, args...)
		require.Equal(t, 0, p.wait(t), "%v: stderr: %s", args, p.stderr)
		assert.Equal(t, "ran\n", p.stdout.String())
	}
}

func TestRunHeldKeyExitsTempFail(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	held := nodes.hold(t, key, time.Minute)
	defer held.Unlock(context.Background())

	for _, wait := range []string{"0", "300ms"} {
		p := run(t, "run", "--nodes", nodes.urls, "--key", key, "--wait", wait, "--", "echo", "ran")
		require.Equal(t, exitTempFail, p.code, "--wait %s: stderr: %s", wait, p.stderr)
		assert.Empty(t, p.stdout.String(), "the command ran without the lock")
		stderr := p.stderr.String()
		assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %s", stderr)
		assert.Contains(t, stderr, fmt.Sprintf("redlock: lock %q not obtained", key))
		assert.Contains(t, stderr, "held by another owner on 3 of 3 nodes")
		if wait != "0" {
			assert.Contains(t, stderr, "within "+wait)
		}
	}
	for _, v := range nodes.values(t, key) {
		assert.Equal(t, held.Token(), v, "the holder's lock was touched")
	}
}

func TestRunWaitsForRelease(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	held := nodes.hold(t, key, time.Minute)

	p := start(t, "", nil, "run", "--nodes", nodes.named("waiter"), "--key", key, "--wait", "1m", "--", "echo", "ran")
	nodes.waitConnected(t, p, "waiter")
	// While the lock is held the command cannot run, however long we look.
	time.Sleep(300 * time.Millisecond)
	require.False(t, p.done(), "exited while the lock was held: %d, stderr: %s", p.code, p.stderr)
	require.Empty(t, p.stdout.String())

	require.NoError(t, held.Unlock(context.Background()))
	require.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
	assert.Equal(t, "ran\n", p.stdout.String())
	nodes.requireFree(t, key)
}

func TestRunKeepsLockLongerThanTTL(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 5)
	key := keyFor(t)
	rival := nodes.client(t)
	// The command runs two and a half TTLs, and marks its end in a file:
	// the file exists before the command exits, hence before the release.
	// Each extension has about 900ms from its due time (TTL/3) to the loss
	// point (400ms before the validity ends); with a 1s TTL it had about
	// 250ms, less than a loaded machine can stall.
	finished := t.TempDir() + "/finished"
	p := start(t, "", nil, "run", "--nodes", nodes.urls, "--key", key, "--ttl", "2s", "--node-timeout", "200ms",
		"--", "sh", "-c", `echo started; sleep 5; touch "$1"; echo finished`, "sh", finished)
	p.waitOutput(t, "started")
	probes := 0
	for !p.done() {
		l, err := rival.TryLock(context.Background(), key, time.Second)
		if err == nil {
			_ = l.Unlock(context.Background())
			_, statErr := os.Stat(finished)
			require.NoError(t, statErr, "a rival took the lock while the command ran (probe %d)", probes)
			break // released after the command
		}
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		probes++
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
	assert.Equal(t, "started\nfinished\n", p.stdout.String())
	assert.Empty(t, p.stderr.String())
	assert.Positive(t, probes)
	nodes.requireFree(t, key)
}

func TestRunLossStopsCommand(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 5)
	key := keyFor(t)
	// The command leaves a child of its own: the whole group must stop.
	p := start(t, "", nil, "run", "--nodes", nodes.urls, "--key", key, "--ttl", "1s", "--node-timeout", "100ms",
		"--grace", "2s", "--", "sh", "-c", "sleep 30 & echo $!; wait")
	p.waitOutput(t, "\n")
	child, err := strconv.Atoi(strings.TrimSpace(p.stdout.String()))
	require.NoError(t, err)

	// Another owner takes the key on a majority (an operator, a broken peer).
	for _, s := range nodes.servers[:3] {
		require.NoError(t, s.Client(t).Set(context.Background(), key, "intruder", time.Minute).Err())
	}
	require.Equal(t, exitLockLost, p.wait(t), "stderr: %s", p.stderr)
	stderr := p.stderr.String()
	assert.Contains(t, stderr, fmt.Sprintf("redlock: lock %q lost", key))
	// Loss is decided at the third refusal (5 nodes, 3 needed), so the
	// message names at least three nodes; which ones depends on the order
	// of the answers, and on whether every node got our SET to begin with.
	named := 0
	for _, s := range nodes.servers {
		if strings.Contains(stderr, s.Addr()) {
			named++
		}
	}
	assert.GreaterOrEqual(t, named, 3, "the message names the nodes that refused")
	requireGone(t, child)
	assert.Equal(t, []string{"intruder", "intruder", "intruder"}, nodes.values(t, key)[:3],
		"the other owner's key was touched")
}

// requireGone waits until process pid has ended (or is a zombie, which no
// longer runs). It skips without /proc.
func requireGone(t *testing.T, pid int) {
	t.Helper()
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Log("no /proc: not checking that the command's child stopped")
		return
	}
	for deadline := time.Now().Add(procTimeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		// pid (comm) state ...: the state follows the last ')'.
		if s := string(stat); strings.HasPrefix(strings.TrimSpace(s[strings.LastIndexByte(s, ')')+1:]), "Z") {
			return
		}
	}
	t.Fatalf("process %d still runs after the lock was lost", pid)
}

func TestRunForwardsSignals(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	tests := []struct {
		sig  syscall.Signal
		name string
	}{
		{syscall.SIGTERM, "TERM"},
		{syscall.SIGINT, "INT"},
		{syscall.SIGHUP, "HUP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := keyFor(t)
			trap := fmt.Sprintf(`trap 'echo got %s; exit 3' %s; echo started; while :; do sleep 0.1; done`, tt.name, tt.name)
			p := start(t, "", nil, "run", "--nodes", nodes.urls, "--key", key, "--", "sh", "-c", trap)
			p.waitOutput(t, "started")
			require.NoError(t, p.cmd.Process.Signal(tt.sig))
			require.Equal(t, 3, p.wait(t), "stderr: %s", p.stderr)
			assert.Contains(t, p.stdout.String(), "got "+tt.name)
			nodes.requireFree(t, key)
		})
	}
	t.Run("killed by it", func(t *testing.T) {
		key := keyFor(t)
		p := start(t, "", nil, "run", "--nodes", nodes.urls, "--key", key, "--", "sh", "-c", "echo started; exec sleep 30")
		p.waitOutput(t, "started")
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		require.Equal(t, 128+int(syscall.SIGTERM), p.wait(t), "stderr: %s", p.stderr)
		nodes.requireFree(t, key)
	})
}

func TestRunSignalWhileWaiting(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	held := nodes.hold(t, key, time.Minute)
	defer held.Unlock(context.Background())

	p := start(t, "", nil, "run", "--nodes", nodes.named("waiter"), "--key", key, "--wait", "1m", "--", "echo", "ran")
	nodes.waitConnected(t, p, "waiter") // by then it listens for signals
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	require.Equal(t, 128+int(syscall.SIGINT), p.wait(t), "stderr: %s", p.stderr)
	assert.Empty(t, p.stdout.String())
	assert.Contains(t, p.stderr.String(), fmt.Sprintf("redlock: stopped waiting for lock %q: interrupt", key))
}

func TestRunUnreachableNodes(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	for _, s := range nodes.servers[:2] {
		s.Kill()
	}
	p := run(t, "run", "--nodes", nodes.urls, "--key", keyFor(t), "--", "echo", "ran")
	require.Equal(t, exitUnavailable, p.code, "stderr: %s", p.stderr)
	assert.Empty(t, p.stdout.String())
	stderr := p.stderr.String()
	assert.Contains(t, stderr, "2 of 3 nodes unreachable")
	for _, s := range nodes.servers[:2] {
		assert.Contains(t, stderr, s.Addr())
	}
}

func TestRunCommandNotStarted(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	dir := t.TempDir()
	notExec := dir + "/script"
	require.NoError(t, os.WriteFile(notExec, []byte("#!/bin/sh\necho hi\n"), 0o644))
	tests := []struct {
		name, command string
		code          int
	}{
		{"not found", "no-such-command-redlock-test", exitNotFound},
		{"missing path", dir + "/missing", exitNotFound},
		{"not executable", notExec, exitCannotExec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := keyFor(t)
			p := run(t, "run", "--nodes", nodes.urls, "--key", key, "--", tt.command)
			require.Equal(t, tt.code, p.code, "stderr: %s", p.stderr)
			assert.Contains(t, p.stderr.String(), "redlock: cannot run")
			nodes.requireFree(t, key)
		})
	}
}

// Nodes that restarted without persistence are in the restart quarantine
// (the default, a day): run is refused with exit 69 (unavailable), and
// says so, rather than naming its own attempt's key as another owner's.
func TestRunNamesTheQuarantine(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	for _, s := range nodes.servers {
		s.Restart(t)
	}
	p := run(t, "run", "--nodes", nodes.urls, "--key", keyFor(t), "--", "echo", "ran")
	require.Equal(t, exitUnavailable, p.code, "stderr: %s", p.stderr)
	assert.Empty(t, p.stdout.String(), "the command ran without the lock")
	stderr := p.stderr.String()
	assert.Contains(t, stderr, "node quarantined after a restart")
	assert.Contains(t, stderr, checkHint)
	assert.NotContains(t, stderr, "held by another owner")
}

// The command runs with REDLOCK_KEY and REDLOCK_TOKEN: the lock it runs
// under, whose token holds the key on the nodes.
func TestRunHandsTheTokenToTheCommand(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	// run starts the command once a majority granted the lock: the third
	// node's SET may still be on its way, so every node is read.
	p := run(t, "run", "--nodes", nodes.urls, "--key", key, "--", "sh", "-c",
		`echo "$REDLOCK_KEY"; echo "$REDLOCK_TOKEN"; for u in "$@"; do echo "$(redis-cli -u "$u" GET "$REDLOCK_KEY")"; done`,
		"sh", nodes.servers[0].URL(), nodes.servers[1].URL(), nodes.servers[2].URL())
	require.Equal(t, 0, p.code, "stderr: %s", p.stderr)
	// One newline off the end, not TrimSpace: a node whose SET had not
	// landed prints an empty last line (1 CI-equivalent run).
	lines := strings.Split(strings.TrimSuffix(p.stdout.String(), "\n"), "\n")
	require.Len(t, lines, 5, "stdout: %q", p.stdout)
	assert.Equal(t, key, lines[0])
	assert.NotEmpty(t, lines[1])
	holders := 0
	for _, v := range lines[2:] {
		if v == lines[1] {
			holders++
		}
	}
	assert.GreaterOrEqual(t, holders, 2, "the token holds the key on a majority while the command runs: %q", lines[2:])
}

package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

// When redlock run is killed with SIGKILL, COMMAND's whole process group
// goes with it, within a second and while the lock is still held, so that
// no one else can have the lock while any of it runs.
func TestRunKilledTakesCommandAlong(t *testing.T) {
	t.Parallel()
	requireProc(t)
	nodes := startNodes(t, 3)
	tests := []struct {
		name, script string
	}{
		// The shell and its background child die of the SIGTERM.
		{"command stops on SIGTERM", `sleep 60 & echo $! $$; wait`},
		// Both ignore SIGTERM: the SIGKILL after the grace time ends them.
		{"command ignores SIGTERM", `trap "" TERM; sleep 60 & echo $! $$; wait`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			key := keyFor(t)
			// A 3s TTL is extended every 1s: after the kill, the lock
			// stays valid for at least about 2s.
			p := start(t, "", nil, "run", "--nodes", nodes.urls, "--key", key, "--ttl", "3s", "--", "sh", "-c", tt.script)
			p.waitOutput(t, "\n")
			pids := strings.Fields(p.stdout.String())
			require.Len(t, pids, 2, "stdout: %s", p.stdout)
			child, err := strconv.Atoi(pids[0])
			require.NoError(t, err)
			pgid := processGroup(t, child)
			require.Contains(t, groupMembers(t, pgid), child)

			killed := time.Now()
			require.NoError(t, p.cmd.Process.Kill())
			<-p.exited
			// The group gets SIGKILL 150ms after the kill (the default
			// grace); it must be gone while the lock is still valid (at
			// least about 2s), the point past which another could take it.
			for len(groupMembers(t, pgid)) > 0 {
				require.Less(t, time.Since(killed), 2*time.Second,
					"COMMAND's group still runs after redlock was killed: %v", groupMembers(t, pgid))
				time.Sleep(10 * time.Millisecond)
			}
			// Gone before anyone else could take the lock.
			_, err = nodes.client(t).TryLock(context.Background(), key, time.Second)
			require.ErrorIs(t, err, redlock.ErrNotObtained, "the lock was free again before COMMAND was gone")
			assert.Contains(t, p.stderr.String(), "stopping the command: SIGTERM now, SIGKILL in 150ms")
		})
	}
}

// When COMMAND exits, the reaper leaves too, and kills nothing.
func TestRunLeavesNoReaper(t *testing.T) {
	t.Parallel()
	requireProc(t)
	nodes := startNodes(t, 3)
	key := keyFor(t)
	// The shell prints its process group: the reaper's pid.
	p := start(t, "", nil, "run", "--nodes", nodes.urls, "--key", key, "--", "sh", "-c", `cut -d" " -f5 /proc/$$/stat`)
	require.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
	pgid, err := strconv.Atoi(strings.TrimSpace(p.stdout.String()))
	require.NoError(t, err, "stdout: %s", p.stdout)
	assert.NotEqual(t, p.cmd.Process.Pid, pgid, "COMMAND has a group of its own")
	assert.Empty(t, groupMembers(t, pgid), "the group is empty")
	assert.Empty(t, p.stderr.String())
	nodes.requireFree(t, key)
}

// The hidden reaper command refuses to run outside redlock run: it would
// kill the process group it finds itself in, here the test's.
func TestReaperAlone(t *testing.T) {
	t.Parallel()
	p := run(t, reaperCommand, "1s")
	require.Equal(t, exitUsage, p.code)
	assert.Contains(t, p.stderr.String(), "not the leader of a process group (this command is run by redlock run)")
}

func requireProc(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to find processes by group")
	}
}

// processGroup returns the process group of pid.
func processGroup(t *testing.T, pid int) int {
	t.Helper()
	f, ok := procStat(pid)
	require.True(t, ok, "no process %d", pid)
	pgid, err := strconv.Atoi(f[2])
	require.NoError(t, err)
	return pgid
}

// groupMembers returns the processes of group pgid that still run
// (zombies, which no longer run, are left out).
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f, ok := procStat(pid); ok && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}

// procStat returns the fields of /proc/pid/stat after the command name:
// state, ppid, pgrp, ...
func procStat(pid int) ([]string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, false
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:]), true
}

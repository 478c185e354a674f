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

// "redlock leader", in-process, on real redis-server processes.

// leader runs the command and returns its exit code and output.
func leader(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := leaderMain(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestLeader(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	election := keyFor(t)

	code, out, stderr := leader(t, "--nodes", nodes.urls, "--election", election)
	require.Equal(t, exitNoLeader, code, "stderr: %s", stderr)
	assert.Contains(t, out, "leader: none\n")

	ls, err := nodes.client(t).Campaign(context.Background(), election, "host-a:8080", 10*time.Second)
	require.NoError(t, err)
	code, out, stderr = leader(t, "--nodes", nodes.urls, "--election", election)
	require.Equal(t, exitOK, code, "stderr: %s", stderr)
	assert.Contains(t, out, "\nleader: host-a:8080\n")
	assert.Contains(t, out, "\nterm: 1\n")

	require.NoError(t, ls.Resign(context.Background()))
	code, out, _ = leader(t, "--nodes", nodes.urls, "--election", election)
	require.Equal(t, exitNoLeader, code)
	assert.Contains(t, out, "leader: none\n")

	for _, s := range nodes.servers[:2] {
		s.Kill()
	}
	code, out, stderr = leader(t, "--nodes", nodes.urls, "--election", election, "--timeout", "200ms")
	require.Equal(t, exitUnavailable, code, "stdout: %s", out)
	assert.Contains(t, stderr, "no majority")
}

func TestLeaderBadUsage(t *testing.T) {
	t.Parallel()
	const nodes = "redis://127.0.0.1:1,redis://127.0.0.1:2,redis://127.0.0.1:3"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no election", []string{"--nodes", nodes}, "--election is required"},
		{"extra argument", []string{"--nodes", nodes, "--election", "e", "extra"}, `unexpected argument "extra"`},
		{"bad timeout", []string{"--nodes", nodes, "--election", "e", "--timeout", "0s"}, "--timeout must be positive"},
		{"bad url", []string{"--nodes", "http://127.0.0.1:1", "--election", "e"}, "scheme must be redis or rediss"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := leader(t, tc.args...)
			require.Equal(t, exitUsage, code)
			assert.Empty(t, out)
			assert.Contains(t, stderr, tc.want)
			assert.Contains(t, stderr, `Run "redlock help leader" for usage.`)
		})
	}
}

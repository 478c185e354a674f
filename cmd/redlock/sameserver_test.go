package main

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
)

// oneServerTwice starts servers P and Q and returns the --nodes of
// 127.0.0.1:P, localhost:P and 127.0.0.1:Q, with P's two addresses and Q.
func oneServerTwice(t *testing.T) (nodes, addr, alias string, q *redistest.Server) {
	t.Helper()
	servers := redistest.StartN(t, 2, redistest.NoPersistence)
	p := servers[0]
	alias = "localhost:" + strconv.Itoa(p.Port)
	return "redis://" + p.Addr() + ",redis://" + alias + ",redis://" + servers[1].Addr(), p.Addr(), alias, servers[1]
}

// nodes check counts neither address of one server, says which nodes are
// one server, and exits 69 when that leaves no majority.
func TestNodesCheckOneServerUnderTwoAddresses(t *testing.T) {
	t.Parallel()
	nodes, addr, alias, _ := oneServerTwice(t)
	code, out, stderr := nodesCmd(t, "check", "--nodes", nodes)
	require.Equal(t, exitUnavailable, code, "stdout: %s\nstderr: %s", out, stderr)
	assert.Regexp(t, `node 0 \(`+addr+`\): the same server as node 1 \(`+alias+`\) \(run_id [0-9a-f]+\)`, out)
	assert.Regexp(t, `node 1 \(`+alias+`\): the same server as node 0 \(`+addr+`\)`, out)
	assert.Contains(t, out, "summary: 1 of 3 nodes count now, 2 needed")
	assert.Contains(t, stderr, "give each node a server of its own")
}

// run does not take a lock out of one server's two addresses (the third
// node down): it exits 69, unavailable, naming both addresses, and the
// command does not run.
func TestRunRefusesOneServerUnderTwoAddresses(t *testing.T) {
	t.Parallel()
	nodes, addr, alias, q := oneServerTwice(t)
	q.Kill()
	p := run(t, "run", "--nodes", nodes, "--key", keyFor(t), "--", "echo", "ran")
	require.Equal(t, exitUnavailable, p.code, "stderr: %s", p.stderr)
	assert.Empty(t, p.stdout.String(), "the command ran under a lock of one server")
	for _, want := range []string{addr, alias, "are one server"} {
		assert.Contains(t, p.stderr.String(), want)
	}
}

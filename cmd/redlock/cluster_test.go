package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/redistest"
)

// TestRunAndStatusOnClusterNodes runs the CLI with --nodes naming three
// Redis Clusters of two masters: run holds the lock and records its holder
// (in the key's slot), status reads both.
func TestRunAndStatusOnClusterNodes(t *testing.T) {
	t.Parallel()
	var urls []string
	clusters := redistest.StartClusters(t, 3, 2, redistest.NoPersistence)
	for _, c := range clusters {
		urls = append(urls, "redis+cluster://"+c.Addrs()[0]+"?addr="+c.Addrs()[1])
	}
	nodes := strings.Join(urls, ",")
	key := keyFor(t)
	p := start(t, "", nil, "run", "--nodes", nodes, "--key", key, "--", "sh", "-c", "echo ran; sleep 3")
	p.waitOutput(t, "ran")

	code, out, stderr := status(t, "--nodes", nodes, "--key", key)
	require.Equal(t, exitOK, code, "stderr: %s", stderr)
	// run returns at a majority: on a loaded machine a node may still be
	// on its way, or have timed out.
	assert.Regexp(t, `summary: held on [23] of 3 nodes \(2 needed\)\n`, out)
	assert.Contains(t, out, "holder: pid ", "run recorded its holder")
	records := 0
	for _, c := range clusters {
		records += int(c.Client(t).Exists(t.Context(), keyslot.Companion(key, "holder")).Val())
	}
	require.Positive(t, records, "the record is in the key's slot")
	require.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
	for _, c := range clusters {
		require.Zero(t, c.Client(t).Exists(t.Context(), key).Val(), "released")
	}
}

// The first day on three clusters formed by redis-cli --cluster create,
// persisting nothing: nodes check prints a row for every shard master,
// each quarantined, and exits 69; nodes declare-fresh declares each shard
// on its master; then nodes check exits 0 and run takes the lock.
func TestNodesOnCLIClusters(t *testing.T) {
	clusters := redistest.StartCLIClusters(t, 3, 3, 0, redistest.NoPersistence)
	var urls []string
	for _, c := range clusters {
		a := c.Addrs()
		urls = append(urls, "redis+cluster://"+a[0]+"?addr="+strings.Join(a[1:], "&addr="))
	}
	nodes := strings.Join(urls, ",")

	code, out, stderr := nodesCmd(t, "check", "--nodes", nodes)
	require.Equal(t, exitUnavailable, code, "stdout: %s\nstderr: %s", out, stderr)
	for i, c := range clusters {
		for _, m := range c.Masters {
			assert.Regexp(t, `\n`+strconv.Itoa(i)+`/\d\s+`+regexp.QuoteMeta(m.Addr())+`\s+yes\s+\S+\s+partial\s+\S+\s+out (1m)?\d+s`, out)
		}
	}
	assert.Contains(t, out, "no fresh-start declaration of its shard")
	assert.Contains(t, stderr, "redlock nodes declare-fresh")

	code, out, stderr = nodesCmd(t, "declare-fresh", "--nodes", nodes)
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", out, stderr)
	assert.Equal(t, 9, strings.Count(out, "SET redlock:fresh-start{"), out)

	code, out, stderr = nodesCmd(t, "check", "--nodes", nodes)
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", out, stderr)
	assert.Contains(t, out, "summary: 3 of 3 nodes count now")

	p := run(t, "run", "--nodes", nodes, "--key", keyFor(t), "--", "echo", "ran")
	require.Equal(t, exitOK, p.code, "stderr: %s", p.stderr)
	assert.Equal(t, "ran\n", p.stdout.String())
}

package main

import (
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

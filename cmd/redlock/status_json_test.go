package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodeStatusJSON reads status --json's output: one object on one line,
// no unknown fields.
func decodeStatusJSON(t *testing.T, out string) statusJSON {
	t.Helper()
	require.Equal(t, 1, strings.Count(out, "\n"), "one line: %s", out)
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	var st statusJSON
	require.NoError(t, dec.Decode(&st), out)
	return st
}

// statusJSONOf runs status --json and returns its exit code, the decoded
// object and the raw output.
func statusJSONOf(t *testing.T, args ...string) (int, statusJSON, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := statusMain(context.Background(), append(args, "--json"), strings.NewReader(""), &stdout, &stderr)
	return code, decodeStatusJSON(t, stdout.String()), stdout.String()
}

// A held lock with a node down: the verdict and exit code of the table, a
// token and TTL per holding node, and the dead node's error.
func TestStatusJSONHeld(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	l := nodes.hold(t, key, time.Minute)
	defer l.Unlock(context.Background())
	nodes.servers[2].Kill()

	code, st, raw := statusJSONOf(t, "--nodes", nodes.urls, "--key", key)
	require.Equal(t, exitOK, code, raw)
	assert.Equal(t, key, st.Key)
	assert.Equal(t, "lock", st.Kind)
	assert.Equal(t, "held", st.Verdict)
	assert.True(t, st.Held)
	assert.Equal(t, l.Token(), st.Token)
	assert.Equal(t, []int{2, 2, 3, 2}, []int{st.Holders, st.Needed, st.Total, st.Answered})
	assert.True(t, st.TTLMillis > 0 && st.TTLMillis <= time.Minute.Milliseconds(), "ttl_ms %d", st.TTLMillis)
	assert.Equal(t, "held on 2 of 3 nodes (2 needed); 1 unreachable", st.Summary)
	assert.Nil(t, st.Holder, "taken through the library: no record")
	require.Len(t, st.Nodes, 3)
	for i, n := range st.Nodes[:2] {
		assert.Equal(t, i, n.Node)
		assert.Equal(t, nodes.servers[i].Addr(), n.Address)
		assert.Equal(t, "held", n.State)
		assert.Equal(t, "lock", n.Kind)
		assert.Equal(t, l.Token(), n.Token)
		assert.Equal(t, 1, n.Leases)
		require.NotNil(t, n.TTLMillis, "node %d", i)
		assert.True(t, *n.TTLMillis > 0 && *n.TTLMillis <= time.Minute.Milliseconds(), "node %d: ttl_ms %d", i, *n.TTLMillis)
		assert.Empty(t, n.Error)
	}
	dead := st.Nodes[2]
	assert.Equal(t, "unreachable", dead.State)
	assert.Equal(t, nodes.servers[2].Addr(), dead.Address)
	assert.Empty(t, dead.Kind)
	assert.Nil(t, dead.TTLMillis, "no TTL where the node did not answer")
	assert.NotEmpty(t, dead.Error)
	assert.Contains(t, raw, `"ttl_ms":null`)
}

// A free key: exit 1 as without --json, every node free, no TTLs, no
// errors (the field is left out).
func TestStatusJSONFree(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	code, st, raw := statusJSONOf(t, "--nodes", nodes.urls, "--key", keyFor(t))
	require.Equal(t, exitFree, code, raw)
	assert.Equal(t, "free", st.Verdict)
	assert.Equal(t, "free", st.Summary)
	assert.False(t, st.Held)
	assert.Empty(t, st.Token)
	assert.Zero(t, st.TTLMillis)
	for _, n := range st.Nodes {
		assert.Equal(t, "free", n.State)
		assert.Nil(t, n.TTLMillis)
	}
	assert.NotContains(t, raw, `"error"`)
}

// A lock taken by redlock run: the holder's record, as the table's
// "holder:" line shows it.
func TestStatusJSONRunHolder(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	finish := t.TempDir() + "/finish"
	t.Cleanup(func() { _ = os.WriteFile(finish, nil, 0o644) }) // never leave the command behind
	p := start(t, "", nil, "run", "--nodes", nodes.urls, "--key", key,
		"--", "sh", "-c", `echo started; while [ ! -e "$1" ]; do sleep 0.05; done`, "sh", finish)
	p.waitOutput(t, "started")
	host, err := os.Hostname()
	require.NoError(t, err)

	code, st, raw := statusJSONOf(t, "--nodes", nodes.urls, "--key", key)
	require.Equal(t, exitOK, code, raw)
	require.NotNil(t, st.Holder, raw)
	assert.Equal(t, p.cmd.Process.Pid, st.Holder.PID)
	assert.Equal(t, host, st.Holder.Host)
	assert.Equal(t, "sh", st.Holder.Command)
	assert.WithinDuration(t, time.Now(), st.Holder.Since, time.Minute)

	require.NoError(t, os.WriteFile(finish, nil, 0o644))
	require.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
}

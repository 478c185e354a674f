package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
)

// composeCommand returns the redis-server arguments of deploy/compose.yaml
// (the "command:" list of its x-redis anchor) and its published ports.
func composeCommand(t *testing.T) (args []string, ports []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "compose.yaml"))
	require.NoError(t, err)
	in := false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.TrimSpace(line) == "command:":
			in = true
		case in && strings.HasPrefix(line, "    - "):
			v := strings.TrimPrefix(line, "    - ")
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			}
			args = append(args, v)
		default:
			in = false
		}
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), `ports: ["`); ok {
			ports = append(ports, strings.TrimSuffix(p, `"]`))
		}
	}
	require.NotEmpty(t, args, "no command in deploy/compose.yaml")
	require.Equal(t, "redis-server", args[0])
	return args[1:], ports
}

// The shipped deployment's nodes count from their first start, with no
// declaration: redis-server run with deploy/compose.yaml's arguments
// persists every write and never evicts, and nodes check says so.
func TestNodesCheckComposeSettings(t *testing.T) {
	t.Parallel()
	args, ports := composeCommand(t)
	assert.Equal(t, []string{"127.0.0.1:7001:6379", "127.0.0.1:7002:6379", "127.0.0.1:7003:6379",
		"127.0.0.1:7004:6379", "127.0.0.1:7005:6379"}, ports)
	servers := redistest.StartNUndeclared(t, 3, redistest.NoPersistence, args...)
	code, out, stderr := nodesCmd(t, "check", "--nodes", urlsOf(servers, ""))
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", out, stderr)
	for _, s := range servers {
		assert.Regexp(t, s.Addr()+`\s+yes\s+\S+\s+always\s+\S+\s+counts\s+noeviction\s`, out)
	}
	assert.NotContains(t, out, "warning")
	assert.Contains(t, out, "summary: 3 of 3 nodes count now, 2 needed")
}

package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Bad input, through the binary: a message and exit 2, never a stack trace.
// Nothing here reaches a node.
func TestBadUsage(t *testing.T) {
	t.Parallel()
	const nodes = "redis://127.0.0.1:1,redis://127.0.0.1:2,redis://127.0.0.1:3"
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no command at all", nil, nil, "Usage:"},
		{"unknown command", nil, []string{"lock"}, `no command "lock"`},
		{"help for unknown command", nil, []string{"help", "lock"}, `no command "lock"`},
		{"unknown flag", nil, []string{"run", "--bogus"}, "flag provided but not defined: -bogus"},
		{"no key", nil, []string{"run", "--nodes", nodes, "--", "true"}, "--key is required"},
		{"no command to run", nil, []string{"run", "--nodes", nodes, "--key", "k"}, "no command to run"},
		{"only --", nil, []string{"run", "--nodes", nodes, "--key", "k", "--"}, "no command to run"},
		{"bad duration", nil, []string{"run", "--nodes", nodes, "--key", "k", "--ttl", "soon", "--", "true"}, `invalid value "soon" for flag -ttl`},
		{"zero ttl", nil, []string{"run", "--nodes", nodes, "--key", "k", "--ttl", "0", "--", "true"}, "--ttl must be at least 10ms, got 0s"},
		{"ttl too short", nil, []string{"run", "--nodes", nodes, "--key", "k", "--ttl", "1ms", "--", "true"}, "--ttl must be at least 10ms"},
		{"negative wait", nil, []string{"run", "--nodes", nodes, "--key", "k", "--wait", "-1s", "--", "true"}, "--wait must not be negative"},
		{"negative grace", nil, []string{"run", "--nodes", nodes, "--key", "k", "--grace", "-1s", "--", "true"}, "--grace must not be negative"},
		{"no nodes", []string{nodesEnv + "="}, []string{"run", "--key", "k", "--", "true"}, "no nodes: give --nodes or set REDLOCK_NODES"},
		{"bad scheme", nil, []string{"run", "--nodes", "http://127.0.0.1:1", "--key", "k", "--", "true"}, "scheme must be redis or rediss"},
		{"stray comma", nil, []string{"run", "--nodes", "redis://127.0.0.1:1,,redis://127.0.0.1:2", "--key", "k", "--", "true"}, "empty URL"},
		{"bad env", []string{nodesEnv + "=redis://127.0.0.1:1,"}, []string{"run", "--key", "k", "--", "true"}, "REDLOCK_NODES: empty URL"},
		{"same node twice", nil, []string{"run", "--nodes", "redis://127.0.0.1:1,redis://127.0.0.1:1", "--key", "k", "--", "true"}, "same address"},
		{"bad port", nil, []string{"run", "--nodes", "redis://127.0.0.1:port", "--key", "k", "--", "true"}, "invalid URL"},
		{"status without key", nil, []string{"status", "--nodes", nodes}, "--key is required"},
		{"status extra argument", nil, []string{"status", "--nodes", nodes, "--key", "k", "extra"}, `unexpected argument "extra"`},
		{"status bad timeout", nil, []string{"status", "--nodes", nodes, "--key", "k", "--timeout", "0s"}, "--timeout must be positive"},
		{"demo bad workers", nil, []string{"demo", "--workers", "0"}, "--workers must be between"},
		{"demo bad tickets", nil, []string{"demo", "--tickets", "many"}, `invalid value "many" for flag -tickets`},
		{"demo bad node", nil, []string{"demo", "--nodes", "redis//x"}, "invalid URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := start(t, "", tt.env, tt.args...)
			require.Equal(t, exitUsage, p.wait(t), "stdout: %s\nstderr: %s", p.stdout, p.stderr)
			assert.Contains(t, p.stderr.String(), tt.want)
		})
	}
}

func TestPasswordNeverShown(t *testing.T) {
	t.Parallel()
	for _, urls := range []string{
		"redis://:hunter2@127.0.0.1:1,http://user:hunter2@127.0.0.1:2",
		"redis://:hunter2@127.0.0.1:1,redis://:hunter2@127.0.0.1:1",
		"redis://user:hunter2@127.0.0.1:port",
	} {
		p := run(t, "run", "--nodes", urls, "--key", "k", "--", "true")
		require.Equal(t, exitUsage, p.code, "stderr: %s", p.stderr)
		assert.NotContains(t, p.stderr.String(), "hunter2")
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args   []string
		stderr bool // the flag package prints -h help on stderr
		want   string
	}{
		{[]string{"help"}, false, "Usage:\n  redlock run"},
		{[]string{"--help"}, false, "Usage:\n  redlock run"},
		{[]string{"help", "run"}, false, "Usage: redlock run"},
		{[]string{"help", "status"}, false, "Usage: redlock status"},
		{[]string{"help", "demo"}, false, "Usage: redlock demo"},
		{[]string{"run", "-h"}, true, "Usage: redlock run"},
		{[]string{"status", "--help"}, true, "Usage: redlock status"},
		{[]string{"demo", "-h"}, true, "Usage: redlock demo"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			p := run(t, tt.args...)
			require.Equal(t, exitOK, p.code, "stderr: %s", p.stderr)
			out := p.stdout.String()
			if tt.stderr {
				out = p.stderr.String()
			}
			assert.Contains(t, out, tt.want)
		})
	}
}

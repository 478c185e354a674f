package main

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Bad input, through the binary: one line saying what is wrong, a hint to
// run help, and exit 2; never the whole usage, never a stack trace. Nothing
// here reaches a node.
func TestBadUsage(t *testing.T) {
	t.Parallel()
	const nodes = "redis://127.0.0.1:1,redis://127.0.0.1:2,redis://127.0.0.1:3"
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"unknown command", nil, []string{"lock"}, `redlock: no command "lock"`},
		{"help for unknown command", nil, []string{"help", "lock"}, `redlock: no command "lock"`},
		{"unknown flag", nil, []string{"run", "--bogus"}, "redlock run: unknown flag --bogus"},
		{"flag without value", nil, []string{"run", "--nodes", nodes, "--key"}, "redlock run: --key needs a value"},
		{"no key", nil, []string{"run", "--nodes", nodes, "--", "true"}, "--key is required"},
		{"no command to run", nil, []string{"run", "--nodes", nodes, "--key", "k"}, "no command to run"},
		{"only --", nil, []string{"run", "--nodes", nodes, "--key", "k", "--"}, "no command to run"},
		{"bad duration", nil, []string{"run", "--nodes", nodes, "--key", "k", "--ttl", "soon", "--", "true"}, `redlock run: bad --ttl "soon": not a duration`},
		{"duration without unit", nil, []string{"run", "--nodes", nodes, "--key", "k", "--ttl", "3", "--", "true"}, `redlock run: bad --ttl "3": a duration needs a unit, as in 3s or 3ms`},
		{"zero node timeout", nil, []string{"run", "--nodes", nodes, "--key", "k", "--node-timeout", "0", "--", "true"}, "--node-timeout must be positive"},
		// Every command that makes a Client keeps to the library's bound
		// on node timeouts, and says it and what to give.
		{"node timeout above the limit", nil, []string{"run", "--nodes", nodes, "--key", "k", "--node-timeout", "5001ms", "--", "true"},
			"redlock run: --node-timeout must be at most 5s, the longest node timeout any client may use (redlock.NodeTimeoutLimit), got 5.001s: give 5s or less"},
		{"status timeout above the limit", nil, []string{"status", "--nodes", nodes, "--key", "k", "--timeout", "6s"}, "redlock status: --timeout must be at most 5s"},
		{"leader timeout above the limit", nil, []string{"leader", "--nodes", nodes, "--election", "e", "--timeout", "6s"}, "redlock leader: --timeout must be at most 5s"},
		{"nodes check timeout above the limit", nil, []string{"nodes", "check", "--nodes", nodes, "--timeout", "6s"}, "redlock nodes: --timeout must be at most 5s"},
		{"nodes declare-fresh timeout above the limit", nil, []string{"nodes", "declare-fresh", "--nodes", nodes, "--timeout", "6s"}, "redlock nodes: --timeout must be at most 5s"},
		{"zero ttl", nil, []string{"run", "--nodes", nodes, "--key", "k", "--ttl", "0", "--", "true"}, "--ttl must be at least 10ms, got 0s"},
		{"ttl too short", nil, []string{"run", "--nodes", nodes, "--key", "k", "--ttl", "1ms", "--", "true"}, "--ttl must be at least 10ms"},
		{"negative wait", nil, []string{"run", "--nodes", nodes, "--key", "k", "--wait", "-1s", "--", "true"}, "--wait must not be negative"},
		{"negative quarantine", nil, []string{"run", "--nodes", nodes, "--key", "k", "--quarantine", "-1s", "--", "true"}, "--quarantine must not be negative"},
		{"negative lock delay", nil, []string{"run", "--nodes", nodes, "--key", "k", "--lock-delay", "-1s", "--", "true"}, "lock delay must be between 1ms and"},
		{"negative max hold", nil, []string{"run", "--nodes", nodes, "--key", "k", "--max-hold", "-1s", "--", "true"}, "--max-hold must not be negative, got -1s"},
		{"max hold under ttl", nil, []string{"run", "--nodes", nodes, "--key", "k", "--ttl", "10s", "--max-hold", "5s", "--", "true"}, "--max-hold must be at least --ttl (10s), got 5s"},
		{"conflict exit code too big", nil, []string{"run", "--nodes", nodes, "--key", "k", "--conflict-exit-code", "256", "--", "true"}, "--conflict-exit-code must be between 0 and 255, got 256"},
		{"negative conflict exit code", nil, []string{"run", "--nodes", nodes, "--key", "k", "--conflict-exit-code", "-1", "--", "true"}, "--conflict-exit-code must be between 0 and 255, got -1"},
		{"conflict exit code not a number", nil, []string{"run", "--nodes", nodes, "--key", "k", "--conflict-exit-code", "busy", "--", "true"}, `redlock run: bad --conflict-exit-code "busy": not a number`},
		{"version extra argument", nil, []string{"version", "now"}, `redlock version: unexpected argument "now"`},
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
		{"status timeout without unit", nil, []string{"status", "--nodes", nodes, "--key", "k", "--timeout", "1"}, `redlock status: bad --timeout "1": a duration needs a unit`},
		{"status same node twice", nil, []string{"status", "--nodes", "redis://127.0.0.1:1,redis://127.0.0.1:1", "--key", "k"}, "same address"},
		{"nodes without subcommand", nil, []string{"nodes"}, "redlock nodes: say check or declare-fresh"},
		{"nodes unknown subcommand", nil, []string{"nodes", "repair"}, `no subcommand "repair"`},
		{"nodes check bad timeout", nil, []string{"nodes", "check", "--nodes", nodes, "--timeout", "0s"}, "--timeout must be positive"},
		{"nodes check extra argument", nil, []string{"nodes", "check", "--nodes", nodes, "extra"}, `unexpected argument "extra"`},
		{"nodes declare-fresh no nodes", []string{nodesEnv + "="}, []string{"nodes", "declare-fresh"}, "no nodes: give --nodes or set REDLOCK_NODES"},
		{"demo bad workers", nil, []string{"demo", "--workers", "0"}, "--workers must be between"},
		{"demo bad tickets", nil, []string{"demo", "--tickets", "many"}, `redlock demo: bad --tickets "many": not a number`},
		{"demo bad node", nil, []string{"demo", "--nodes", "redis//x"}, "invalid URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := start(t, "", tt.env, tt.args...)
			require.Equal(t, exitUsage, p.wait(t), "stdout: %s\nstderr: %s", p.stdout, p.stderr)
			assert.Empty(t, p.stdout.String())
			lines := strings.Split(strings.TrimSuffix(p.stderr.String(), "\n"), "\n")
			require.Len(t, lines, 2, "one line and a hint: %s", p.stderr)
			assert.Contains(t, lines[0], tt.want)
			assert.Regexp(t, `^Run "redlock help( \w+)?" for usage\.$`, lines[1])
		})
	}
	t.Run("no command at all", func(t *testing.T) {
		t.Parallel()
		p := run(t)
		require.Equal(t, exitUsage, p.code)
		assert.Contains(t, p.stderr.String(), "Usage:")
	})
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

// Help, asked for, goes to stdout and exits 0.
func TestHelp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"help"}, "Usage:\n  redlock run"},
		{[]string{"--help"}, "Usage:\n  redlock run"},
		{[]string{"help", "run"}, "Usage: redlock run"},
		{[]string{"help", "status"}, "Usage: redlock status"},
		{[]string{"help", "demo"}, "Usage: redlock demo"},
		{[]string{"help", "leader"}, "Usage: redlock leader"},
		{[]string{"help", "nodes"}, "Usage: redlock nodes check"},
		{[]string{"nodes", "check", "--help"}, "Usage: redlock nodes check"},
		{[]string{"nodes", "--help"}, "Usage: redlock nodes check"},
		{[]string{"leader", "--help"}, "Usage: redlock leader"},
		{[]string{"run", "-h"}, "Usage: redlock run"},
		{[]string{"run", "--help"}, "Usage: redlock run"},
		{[]string{"run", "--key", "k", "--help", "--", "true"}, "Usage: redlock run"},
		{[]string{"status", "--help"}, "Usage: redlock status"},
		{[]string{"demo", "-h"}, "Usage: redlock demo"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			p := run(t, tt.args...)
			require.Equal(t, exitOK, p.code, "stderr: %s", p.stderr)
			assert.Contains(t, p.stdout.String(), tt.want)
			assert.Empty(t, p.stderr.String())
		})
	}
}

// Every flag a command takes is in its usage text and in the overview.
func TestUsageListsEveryFlag(t *testing.T) {
	t.Parallel()
	for name, c := range commands {
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		c.flags(fs)
		overview := commandLine(t, usageText, "redlock "+name+" ")
		fs.VisitAll(func(f *flag.Flag) {
			// A flag that takes a value is "--name V"; a boolean one "[--name]".
			spelled := "--" + f.Name + " "
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				spelled = "[--" + f.Name + "]"
			}
			assert.Contains(t, c.usage, "\n  --"+f.Name+" ", "%s: --%s in the flags' list", name, f.Name)
			assert.Contains(t, usageLine(c.usage), spelled, "%s: --%s in the Usage line", name, f.Name)
			assert.Contains(t, overview, spelled, "%s: --%s in the overview", name, f.Name)
		})
	}
}

// usageLine returns a command's Usage line, with its continuation lines.
func usageLine(usage string) string {
	line, _, _ := strings.Cut(usage, "\n\n")
	return line
}

// commandLine returns the overview's lines about one command: the line that
// starts with prefix and the indented lines after it.
func commandLine(t *testing.T, overview, prefix string) string {
	t.Helper()
	var out []string
	for line := range strings.Lines(overview) {
		switch {
		case strings.HasPrefix(strings.TrimSpace(line), prefix):
			out = append(out, line)
		case len(out) > 0 && strings.HasPrefix(line, "      "):
			out = append(out, line)
		case len(out) > 0:
			return strings.Join(out, "")
		}
	}
	require.NotEmpty(t, out, "no line %q in the overview", prefix)
	return strings.Join(out, "")
}

// The defaults that depend on the TTL follow the library's rules.
func TestRunDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ttl, nodeTimeout, margin time.Duration
	}{
		{10 * time.Second, 500 * time.Millisecond, time.Second},
		{30 * time.Second, 500 * time.Millisecond, 3 * time.Second},
		{time.Minute, 500 * time.Millisecond, 6 * time.Second},
		{2 * time.Second, 100 * time.Millisecond, 200 * time.Millisecond},
		{10 * time.Millisecond, time.Millisecond, 2 * time.Millisecond},
	}
	for _, tt := range tests {
		nt := defaultNodeTimeout(tt.ttl)
		assert.Equal(t, tt.nodeTimeout, nt, "node timeout for a %v TTL", tt.ttl)
		assert.Equal(t, tt.margin, lossMargin(tt.ttl, nt), "margin for a %v TTL", tt.ttl)
	}
	// A node timeout above TTL/20 widens the margin (the library refuses a
	// TTL that leaves no validity beyond it).
	assert.Equal(t, 2*time.Second, lossMargin(10*time.Second, time.Second))
	assert.Equal(t, 4*time.Second, lossMargin(10*time.Second, 2*time.Second))
}

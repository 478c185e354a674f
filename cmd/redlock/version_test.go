package main

import (
	"regexp"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// "redlock version" and "redlock --version", through the binary: one line
// on stdout, exit 0; an argument is a usage error.
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	line := regexp.MustCompile(`^redlock (\(devel\)|v\d+\.\d+\.\d+\S*) go\d+\.\d+\S*\n$`)
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		p := run(t, args...)
		require.Equal(t, exitOK, p.code, "%v: stderr: %s", args, p.stderr)
		assert.Regexp(t, line, p.stdout.String(), "%v", args)
		assert.Contains(t, p.stdout.String(), " "+runtime.Version()+"\n", "%v: the Go version that built it", args)
		assert.Empty(t, p.stderr.String())
	}
	p := run(t, "version", "extra")
	require.Equal(t, exitUsage, p.code)
	assert.Contains(t, p.stderr.String(), `redlock version: unexpected argument "extra"`)
	p = run(t, "help", "version")
	require.Equal(t, exitOK, p.code)
	assert.Contains(t, p.stdout.String(), "Usage: redlock version")
}

// The line comes from the build information: the module's version when the
// go command recorded one, "(devel)" otherwise.
func TestVersionLine(t *testing.T) {
	t.Parallel()
	tagged := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/redlockgo/redlock", Version: "v1.2.3"}}
	checkout := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/redlockgo/redlock", Version: "(devel)"}}
	empty := &debug.BuildInfo{Main: debug.Module{Path: "github.com/redlockgo/redlock"}}
	assert.Equal(t, "redlock v1.2.3 go1.26.0", versionLine(tagged, true))
	assert.Equal(t, "redlock (devel) go1.26.0", versionLine(checkout, true))
	assert.Equal(t, "redlock (devel) "+runtime.Version(), versionLine(empty, true))
	assert.Equal(t, "redlock (devel) "+runtime.Version(), versionLine(nil, false))
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repoRoot is the root of the checkout, relative to this package.
const repoRoot = "../.."

// The build command docs/cli.md gives works at the repository root, as
// written, and builds a redlock that runs. (A plain "go build ./cmd/redlock"
// there fails: its output, "redlock", is the library's directory.)
func TestDocsBuildCommand(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "cli.md"))
	require.NoError(t, err)
	var build []string
	for line := range strings.Lines(string(doc)) {
		line, _, _ = strings.Cut(line, "#")
		if f := strings.Fields(line); len(f) > 2 && f[0] == "go" && f[1] == "build" {
			build = f
			break
		}
	}
	require.NotNil(t, build, "no go build command in docs/cli.md")
	i := indexOf(build, "-o")
	require.True(t, i > 0 && i+1 < len(build), "the build command names its output: %v", build)
	out := filepath.Join(repoRoot, build[i+1])
	if strings.HasSuffix(build[i+1], "/") {
		out = filepath.Join(out, "redlock")
	}
	removeIfNew(t, filepath.Dir(out))
	removeIfNew(t, out)

	cmd := exec.Command(goTool(), build[1:]...)
	cmd.Dir = repoRoot
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s in the repository root:\n%s", strings.Join(build, " "), b)
	help, err := exec.Command(out, "--help").Output()
	require.NoError(t, err)
	assert.Contains(t, string(help), "Usage:")
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// removeIfNew removes path when t ends, if it does not exist now.
func removeIfNew(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	t.Cleanup(func() { _ = os.RemoveAll(path) })
}

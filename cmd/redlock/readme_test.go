package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeLines is the most README.md may have: what it is, how to start, and
// links; the rest belongs in docs/.
const readmeLines = 200

func TestReadmeShort(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	readme := string(b)
	assert.LessOrEqual(t, strings.Count(readme, "\n"), readmeLines, "README.md: move sections into docs/")
	// The two commands a newcomer needs, as the Makefile's header and the
	// CI hook give them.
	assert.Contains(t, readme, "go run ./cmd/redlock demo")
	assert.Contains(t, readme, "make test")
}

// snippetDocs are the documents whose Go snippets must compile: the README,
// and the guide its snippets beyond the quick start moved to.
var snippetDocs = []string{"README.md", "docs/usage.md"}

// Every Go snippet of snippetDocs compiles against the current API. A
// snippet is an optional import block followed by statements; it becomes
// the body of a function returning an error in a package that exists only in an overlay, next
// to a prelude that declares what the snippets take as given (ctx, locks,
// c, bill, serve, waitForWorkers). "{ ... }" stands for error handling.
// Variables a snippet declares and leaves unused are fine: it is an excerpt.
func TestReadmeSnippetsCompile(t *testing.T) {
	t.Parallel()
	var snippets []string
	for _, doc := range snippetDocs {
		b, err := os.ReadFile(filepath.Join(repoRoot, doc))
		require.NoError(t, err)
		s := goSnippets(string(b))
		require.NotEmpty(t, s, "no ```go block in %s", doc)
		snippets = append(snippets, s...)
	}

	root, err := filepath.Abs(repoRoot)
	require.NoError(t, err)
	pkgDir := filepath.Join(root, "cmd", "redlock", "internal", "readmesnippets") // never on disk
	tmp := t.TempDir()
	overlay := map[string]string{}
	add := func(name, src string) {
		p := filepath.Join(tmp, name)
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
		overlay[filepath.Join(pkgDir, name)] = p
	}
	add("prelude.go", readmePrelude)
	for i, s := range snippets {
		add(fmt.Sprintf("snippet%02d.go", i), snippetFile(i, s))
	}
	o, err := json.Marshal(map[string]any{"Replace": overlay})
	require.NoError(t, err)
	oPath := filepath.Join(tmp, "overlay.json")
	require.NoError(t, os.WriteFile(oPath, o, 0o644))

	cmd := exec.Command(goTool(), "build", "-overlay", oPath, "-gcflags=-e", "./cmd/redlock/internal/readmesnippets")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err == nil {
		return
	}
	var real []string
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "#") || strings.Contains(line, "declared and not used") {
			continue
		}
		real = append(real, line)
	}
	assert.Empty(t, real, "Go snippets of %v do not compile (snippetNN is the NN-th ```go block of them, from 0):\n%s", snippetDocs, out)
}

// readmePrelude declares what README snippets use without declaring it.
const readmePrelude = `package readmesnippets

import (
	"context"

	"github.com/redlockgo/redlock/redlock"
)

var (
	ctx      = context.Background()
	locks, c *redlock.Client
)

func bill(context.Context) error { return nil }
func serve(context.Context, *redlock.Client) {}
func waitForWorkers() {}
`

var goBlock = regexp.MustCompile("(?ms)^```go\n(.*?)^```")

// goSnippets returns the contents of the ```go blocks of a Markdown text.
func goSnippets(md string) []string {
	var out []string
	for _, m := range goBlock.FindAllStringSubmatch(md, -1) {
		out = append(out, m[1])
	}
	return out
}

var importBlock = regexp.MustCompile(`(?s)^\s*import \((.*?)\)\n`)

// snippetImports are imported into every snippet's file (each used once
// there, so that a snippet need not use it), unless the snippet imports it.
var snippetImports = []struct{ path, use string }{
	{"context", "context.Background"},
	{"errors", "errors.Is"},
	{"log", "log.Printf"},
	{"os", "os.Interrupt"},
	{"os/signal", "signal.NotifyContext"},
	{"syscall", "syscall.SIGTERM"},
	{"time", "time.Second"},
	{"github.com/redlockgo/redlock/redlock", "redlock.New"},
}

// snippetFile turns snippet i into a Go file: its imports, and its
// statements as the body of a function that returns an error (the Quick
// start's is examples/quickstart's, which returns its errors).
func snippetFile(i int, s string) string {
	imports := ""
	if m := importBlock.FindStringSubmatch(s); m != nil {
		imports, s = m[1], s[len(m[0]):]
	}
	var uses []string
	for _, si := range snippetImports {
		if !strings.Contains(imports, strconv.Quote(si.path)) {
			imports += "\t" + strconv.Quote(si.path) + "\n"
			uses = append(uses, "var _ = "+si.use+"\n")
		}
	}
	s = strings.ReplaceAll(s, "{ ... }", "{ panic(err) }")
	return fmt.Sprintf("package readmesnippets\n\nimport (\n%s)\n\n%s\nfunc snippet%02d() error {\n%s\treturn nil\n}\n",
		imports, strings.Join(uses, ""), i, s)
}

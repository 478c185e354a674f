package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

// readmeQuickStart returns the statements of the README's Quick start
// snippet (its first ```go block, after the import block).
func readmeQuickStart(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?ms)^## Quick start\n\n```go\n(.*?)^```").FindSubmatch(b)
	if m == nil {
		t.Fatal("README.md has no Quick start with a ```go block")
	}
	snippet := string(m[1])
	imports := regexp.MustCompile(`(?s)^import \((.*?)\)\n`).FindStringSubmatch(snippet)
	if imports == nil {
		t.Fatal("the Quick start does not begin with its import block")
	}
	for _, path := range []string{`"github.com/redlockgo/redlock/pool"`, `"github.com/redlockgo/redlock/redlock"`} {
		if !strings.Contains(imports[1], path) {
			t.Errorf("the Quick start's imports lack %s", path)
		}
	}
	return snippet[len(imports[0]):]
}

// programQuickStart returns the statements of quickstart in main.go,
// between its markers.
func programQuickStart(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)// quickstart:begin\n(.*?)\t// quickstart:end`).FindSubmatch(b)
	if m == nil {
		t.Fatal("main.go has no quickstart:begin/end markers")
	}
	return string(m[1])
}

// gofmted formats statements as the body of a function, as gofmt would.
func gofmted(t *testing.T, what, stmts string) string {
	t.Helper()
	out, err := format.Source([]byte("package p\n\nfunc f() error {\n" + strings.TrimSpace(stmts) + "\n}\n"))
	if err != nil {
		t.Fatalf("%s does not parse as Go statements: %v", what, err)
	}
	return string(out)
}

// The README's Quick start is this program's code: its snippet is the body
// of quickstart, as gofmt formats both (the README may keep an if on one
// line), comments included.
func TestReadmeQuickStartIsThisProgram(t *testing.T) {
	readme := gofmted(t, "the README's Quick start", readmeQuickStart(t))
	program := gofmted(t, "main.go's quickstart", programQuickStart(t))
	if readme != program {
		t.Errorf("README.md's Quick start and examples/quickstart/main.go differ: copy one to the other.\nREADME:\n%s\nmain.go:\n%s", readme, program)
	}
}

// quickStartBound is how long the Quick start may wait for five brand-new
// stock nodes: the default restart quarantine, which such nodes sit out
// (no appendonly, no fresh-start declaration), and a margin for starting
// the program and taking the lock.
const quickStartBound = redlock.DefaultQuarantine + 15*time.Second

// The Quick start, as written, against five stock redis-servers started
// as a user starts them (no appendonly, no declaration): it gets its lock
// and runs the function within the default quarantine and a margin, and
// its wait for the quarantine is told in one line on Go's default logger.
// The one test that waits out a default quarantine.
func TestQuickStartOnStockNodes(t *testing.T) {
	servers := redistest.StartNUndeclared(t, 5, redistest.NoPersistence)
	bin := buildQuickStart(t, servers)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := runWithin(t, cmd, quickStartBound)
	if err := <-done; err != nil {
		t.Fatalf("the Quick start failed on stock nodes within %v: %v\nstdout: %s\nstderr: %s", quickStartBound, err, &stdout, &stderr)
	}
	if !strings.Contains(stdout.String(), "billed invoice 42") {
		t.Fatalf("the Quick start did not run its function: stdout %q, stderr %q", &stdout, &stderr)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if strings.Contains(l, "key=invoice:42") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("want one line on the default logger when the wait began, got %q", &stderr)
	}
	for _, want := range []string{"WARN redlock: waiting for the nodes' restart quarantine", "counts_in="} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("the wait's line %q lacks %q", lines[0], want)
		}
	}
}

// runWithin starts cmd and returns a channel that gets its Wait's result,
// or an error once bound has passed (the process is then killed).
func runWithin(t *testing.T, cmd *exec.Cmd, bound time.Duration) <-chan error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := make(chan error, 1)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	go func() {
		select {
		case err := <-exited:
			out <- err
		case <-time.After(bound):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			out <- errors.New("still waiting at the bound")
		}
	}()
	return out
}

// buildQuickStart builds this program with the Quick start's node URLs
// (r1..r5:6379) replaced by those of servers, and nothing else changed, and
// returns the binary's path.
func buildQuickStart(t *testing.T, servers []*redistest.Server) string {
	t.Helper()
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	urls := regexp.MustCompile(`"redis://r[1-5]:6379"`)
	if n := len(urls.FindAll(src, -1)); n != len(servers) {
		t.Fatalf("main.go names %d nodes r1..r5:6379, want %d", n, len(servers))
	}
	i := 0
	src = urls.ReplaceAllFunc(src, func([]byte) []byte {
		i++
		return []byte(`"` + servers[i-1].URL() + `"`)
	})
	tmp := t.TempDir()
	main := filepath.Join(tmp, "main.go")
	if err := os.WriteFile(main, src, 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("main.go")
	if err != nil {
		t.Fatal(err)
	}
	overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{abs: main}})
	if err != nil {
		t.Fatal(err)
	}
	oPath := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(oPath, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "quickstart")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, goTool(), "build", "-overlay", oPath, "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// goTool returns the go command of the toolchain running the test.
func goTool() string {
	if p := filepath.Join(os.Getenv("GOROOT"), "bin", "go"); os.Getenv("GOROOT") != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}

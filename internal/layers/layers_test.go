// Package layers holds the test that keeps the module's import rules
// (docs/design.md, "Packages and import rules").
package layers_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/redlockgo/redlock/"

// floors orders the module's packages from the bottom up: a package may
// import only packages on lower floors (and packages of its own subtree).
// A package not listed is on the floor of its nearest listed parent.
var floors = [][]string{
	{"clock", "internal/random", "internal/keyslot", "internal/fanout"},
	{"internal/keyspace"},
	{"pool"}, // and pool/internal/...; neither imports internal/
	{"internal/scripts", "internal/shardwatch", "internal/pooltest"},
	{"internal/node", "internal/redistest"},
	{"internal/wait", "internal/redistls"},
	{"internal/lease"},
	{"redlock"},
	// Kits and tools over the lock: none imports another.
	{"redlocktest", "redlockotel", "pool/conformance", "pool/rueidispool", "cmd", "examples"},
	// The simulation, which drives the test kit.
	{"internal/sim"},
}

// floorOf returns the floor of pkg (a path inside the module) and the
// listed package it belongs to.
func floorOf(pkg string) (int, string, bool) {
	best, floor, found := "", 0, false
	for f, names := range floors {
		for _, n := range names {
			if (pkg == n || strings.HasPrefix(pkg, n+"/")) && len(n) > len(best) {
				best, floor, found = n, f, true
			}
		}
	}
	return floor, best, found
}

// imports returns the module packages each package of the module imports
// from its non-test files, by directory.
func imports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "integration") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			dep, ok := strings.CutPrefix(p, module)
			if ok && !slices.Contains(out[pkg], dep) {
				out[pkg] = append(out[pkg], dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImportRules: every package imports only packages on lower floors or
// of its own subtree; the kits over the lock, one floor, import none of
// each other; nothing imports a command.
func TestImportRules(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	all := imports(t, root)
	if len(all) < 10 {
		t.Fatalf("found %d packages: the walk is wrong", len(all))
	}
	for pkg, deps := range all {
		from, home, ok := floorOf(pkg)
		if !ok {
			t.Errorf("%s is on no floor: add it to floors (and to docs/design.md)", pkg)
			continue
		}
		for _, dep := range deps {
			to, depHome, ok := floorOf(dep)
			switch {
			case strings.HasPrefix(dep, "cmd/") || dep == "cmd":
				t.Errorf("%s imports the command %s", pkg, dep)
			case !ok:
				t.Errorf("%s imports %s, which is on no floor", pkg, dep)
			case (pkg == "pool" || strings.HasPrefix(pkg, "pool/internal/")) && strings.HasPrefix(dep, "internal/"):
				t.Errorf("%s imports %s: what adapters and users call imports nothing of the engine", pkg, dep)
			case depHome == home:
				// its own subtree
			case to >= from:
				t.Errorf("%s (floor %d) imports %s (floor %d): only lower floors", pkg, from, dep, to)
			}
		}
	}
}

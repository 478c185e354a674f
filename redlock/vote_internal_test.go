package redlock

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneJudge keeps every decision fan-out of the package in vote.go,
// where decide judges each node's answer (health) before it counts: a new
// kind or call that fanned out on its own would go around the quarantine
// and the clock check, as readers, permits and multi-locks once did; a
// node's health is read only there too (health, grantHealth). The fan-outs
// that decide nothing go through vote.go too (each), and so do a waiter's
// rounds (call), so that every call to a node is made in one file. The
// calls themselves are the kinds' (internal/lease): no file here calls a
// node's Pool, except for its address.
func TestOneJudge(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	pools, addrs := map[token.Pos]string{}, map[token.Pos]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "vote.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "fanout" && (sel.Sel.Name == "Quorum" || sel.Sel.Name == "QuorumOn" || sel.Sel.Name == "Decide") {
				t.Errorf("%s: fanout.%s outside vote.go: decide (judged) or confirm (a release) instead", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "fanout" && sel.Sel.Name == "Each" {
				t.Errorf("%s: fanout.Each outside vote.go: each (a fan-out that decides nothing) instead", fset.Position(sel.Pos()))
			}
			if x, ok := sel.X.(*ast.SelectorExpr); ok && x.Sel.Name == "nodes" && sel.Sel.Name == "Health" {
				t.Errorf("%s: nodes.Health outside vote.go: health (or grantHealth) instead", fset.Position(sel.Pos()))
			}
			if x, ok := sel.X.(*ast.SelectorExpr); ok && x.Sel.Name == "nodes" && sel.Sel.Name == "Pool" {
				pools[sel.Pos()] = fset.Position(sel.Pos()).String()
			}
			if call, ok := sel.X.(*ast.CallExpr); ok && sel.Sel.Name == "Addr" {
				if f, ok := call.Fun.(*ast.SelectorExpr); ok && f.Sel.Name == "Pool" {
					addrs[f.Pos()] = true
				}
			}
			return true
		})
	}
	for pos, at := range pools {
		if !addrs[pos] {
			t.Errorf("%s: a node's Pool called in redlock/: node calls are the kinds' (internal/lease), run by vote.go's fan-outs", at)
		}
	}
	if len(addrs) == 0 {
		t.Error("no Pool(i).Addr() seen: the check no longer finds the Pool selector")
	}
	if checked < 10 {
		t.Fatalf("checked %d files: the package's sources were not found", checked)
	}
}

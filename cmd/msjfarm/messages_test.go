package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sweep"
)

// userFacing are the packages whose error strings reach a user who runs a
// command or writes a sweep file: the command, the sweep reader, and what
// it validates with (workloads, distributions, traces, policy parameters,
// the run block).
var userFacing = []string{".", "../../sweep", "../../model/workload", "../../model/dist", "../../model/swf", "../../sim", "../../internal/wire"}

// errorFuncs are the calls whose first string argument is a message a
// user reads.
var errorFuncs = map[string]bool{"Errorf": true, "New": true, "fail": true, "usagef": true, "fieldErr": true, "missingErr": true, "unknownName": true}

// TestNoGoTypeNamesInMessages is the vet-style check that no error
// message a user meets names a Go type: no %T verb and no Go type
// spelling ('sweep.File', map[string]…, (float64)) in the format strings
// of the user-facing packages (errors.New, fmt.Errorf, fail, usagef and
// the sweep package's error builders). A message says "a whole number",
// "a list", "the text \"x\"" instead.
func TestNoGoTypeNamesInMessages(t *testing.T) {
	fset := token.NewFileSet()
	n := 0
	for _, dir := range userFacing {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") || strings.Contains(file, ".pb.go") {
				continue
			}
			f, err := parser.ParseFile(fset, file, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(node ast.Node) bool {
				call, ok := node.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				var name string
				switch fn := call.Fun.(type) {
				case *ast.SelectorExpr:
					name = fn.Sel.Name
				case *ast.Ident:
					name = fn.Name
				}
				if !errorFuncs[name] {
					return true
				}
				for _, a := range call.Args {
					lit, ok := a.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						continue
					}
					n++
					if strings.Contains(s, "%T") || goType.MatchString(s) {
						t.Errorf("%s: message names a Go type: %q", fset.Position(lit.Pos()), s)
					}
				}
				return true
			})
		}
	}
	if n < 200 {
		t.Fatalf("only %d messages found: the scan is broken", n)
	}
}

// TestBadSweepMessagesHaveNoGoTypes runs every refused sweep of the sweep
// package's corpus (sweep/testdata/bad) and checks the message a user
// would read: placed in the file, and without a Go type name.
func TestBadSweepMessagesHaveNoGoTypes(t *testing.T) {
	paths, _ := filepath.Glob("../../sweep/testdata/bad/*.yaml")
	if len(paths) == 0 {
		t.Fatal("no bad sweeps")
	}
	for _, p := range paths {
		f, err := sweep.Load(p)
		if err == nil {
			if _, err = sweep.ReadTraceFile(f, 1<<20); err == nil {
				_, err = sweep.Expand(f, withPolicyNames(builtin.Catalog{}))
			}
		}
		if err == nil {
			t.Errorf("%s: accepted", p)
			continue
		}
		msg := err.Error()
		if goType.MatchString(msg) {
			t.Errorf("%s: a Go type name in %q", p, msg)
		}
		if !strings.HasPrefix(msg, p+":") {
			t.Errorf("%s: the message does not begin with the file: %q", p, msg)
		}
	}
	if _, err := os.Stat("../../sweep/testdata/bad"); err != nil {
		t.Fatal(err)
	}
}

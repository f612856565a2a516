package launch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/testenv"
)

// starters are the ways Go starts a process, by import path: each one
// outside launch would start a child with whatever environment and user
// its caller gave it.
var starters = map[string][]string{
	"os/exec":               {"Command", "CommandContext"},
	"os":                    {"StartProcess"},
	"syscall":               {"Exec", "ForkExec", "StartProcess"},
	"golang.org/x/sys/unix": {"Exec"},
}

// TestOnlyLaunchStartsProcesses: no file of the module but launch's
// starts a process (tests, the fakes under internal/fake* and
// internal/testbin, which builds binaries for tests, and
// internal/archcheck, the build's check that runs `go list`, aside). A new child
// goes through launch.Start or launch.Run, which give it the agent's
// environment and user; if one does not fit, change launch.
func TestOnlyLaunchStartsProcesses(t *testing.T) {
	root := testenv.RepoRoot()
	fset := token.NewFileSet()
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata" ||
				rel == "launch" || strings.HasPrefix(rel, "internal/fake") || rel == "internal/testbin" || rel == "internal/archcheck") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, u := range startsIn(f) {
			found = append(found, rel+": "+u.name+" at line "+strconv.Itoa(fset.Position(u.pos).Line))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s starts a process outside launch: start it with launch.Start or launch.Run", f)
	}
}

type use struct {
	name string
	pos  token.Pos
}

// startsIn lists the uses in f of a starter, under whatever name f
// imports its package.
func startsIn(f *ast.File) []use {
	local := map[string][]string{} // the name f uses for a package -> its starters
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		names, ok := starters[path]
		if !ok {
			continue
		}
		name := path[strings.LastIndexByte(path, '/')+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		local[name] = names
	}
	var out []use
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.CompositeLit); ok {
			// An exec.Cmd made by hand, to be started by its Start.
			if sel, ok := lit.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Cmd" {
				if pkg, ok := sel.X.(*ast.Ident); ok && local[pkg.Name] != nil && pkg.Name == execName(f) {
					out = append(out, use{name: pkg.Name + ".Cmd{}", pos: lit.Pos()})
				}
			}
			return true
		}
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		pkg, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		for _, s := range local[pkg.Name] {
			if sel.Sel.Name == s {
				out = append(out, use{name: pkg.Name + "." + s, pos: sel.Pos()})
			}
		}
		return true
	})
	return out
}

// execName is the name f imports os/exec under, or "".
func execName(f *ast.File) string {
	for _, imp := range f.Imports {
		if imp.Path.Value == `"os/exec"` {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return "exec"
		}
	}
	return ""
}

// TestStartsInFindsEveryForm: the search finds each starter, also under
// another import name, and not a mere mention in a comment or a string.
func TestStartsInFindsEveryForm(t *testing.T) {
	src := `package p
import (
	x "os/exec"
	"os"
	"syscall"
)
// exec.Command in a comment
var s = "exec.Command"
func f() {
	_ = x.Command("a")
	_ = x.CommandContext(nil, "a")
	_ = &x.Cmd{Path: "a"}
	var c *x.Cmd
	_ = c
	_, _ = os.StartProcess("a", nil, nil)
	_ = syscall.Exec("a", nil, nil)
	_, _ = x.LookPath("a")
}`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range startsIn(f) {
		got = append(got, u.name)
	}
	want := "x.Command x.CommandContext x.Cmd{} os.StartProcess syscall.Exec"
	if strings.Join(got, " ") != want {
		t.Errorf("startsIn = %q, want %q", got, want)
	}
}

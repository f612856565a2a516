package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// pkg is one package of the module as `go list` sees it.
type pkg struct {
	ImportPath     string
	Dir            string
	GoFiles        []string
	CgoFiles       []string
	TestGoFiles    []string
	XTestGoFiles   []string
	IgnoredGoFiles []string // left out by build constraints here, checked all the same
	Module         *struct{ Path string }
	Error          *struct{ Err string }

	rel string // ImportPath relative to the module root: "engine", "." for the root
}

// listPackages runs `go list` on every package of the module in dir. It
// asks only for file names: the imports are read from the files, so that
// each can be reported with its position, and files that build only on
// another system are checked too.
func listPackages(ctx context.Context, dir string) (module string, pkgs []*pkg, err error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-e",
		"-json=ImportPath,Dir,GoFiles,CgoFiles,TestGoFiles,XTestGoFiles,IgnoredGoFiles,Module,Error", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", nil, fmt.Errorf("go list ./...: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := new(pkg)
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", nil, fmt.Errorf("reading go list's output: %w", err)
		}
		if p.Error != nil {
			return "", nil, fmt.Errorf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		if p.Module == nil {
			return "", nil, fmt.Errorf("go list: %s is in no module", p.ImportPath)
		}
		module = p.Module.Path
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		return "", nil, fmt.Errorf("go list found no packages in %s", dir)
	}
	for _, p := range pkgs {
		p.rel = relPath(module, p.ImportPath)
	}
	return module, pkgs, nil
}

func relPath(module, path string) string {
	if path == module {
		return "."
	}
	return strings.TrimPrefix(path, module+"/")
}

// importUse is one import statement of a package.
type importUse struct {
	path string // relative to the module root when inside it
	pos  token.Position
	test bool // in a _test.go file
	std  bool
	own  bool // a package of the module
}

// readImports parses the import blocks of every Go file of p.
func readImports(module string, p *pkg) ([]importUse, error) {
	var files []string
	files = append(files, p.GoFiles...)
	files = append(files, p.CgoFiles...)
	files = append(files, p.TestGoFiles...)
	files = append(files, p.XTestGoFiles...)
	files = append(files, p.IgnoredGoFiles...)
	fset := token.NewFileSet()
	var out []importUse
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ImportsOnly|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("reading the imports of %s: %w", p.rel, err)
		}
		for _, spec := range f.Imports {
			path, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: bad import %s", fset.Position(spec.Pos()), spec.Path.Value)
			}
			u := importUse{path: path, pos: fset.Position(spec.Pos()), test: strings.HasSuffix(name, "_test.go")}
			first, _, _ := strings.Cut(path, "/")
			switch {
			case path == module || strings.HasPrefix(path, module+"/"):
				u.own, u.path = true, relPath(module, path)
			case !strings.Contains(first, "."):
				u.std = true
			}
			out = append(out, u)
		}
	}
	return out, nil
}

// problem is one failure, printed as one line.
type problem struct {
	where string // file:line, or a package or a row
	msg   string
}

func (p problem) String() string { return p.where + ": " + p.msg }

// rowFor finds the row that governs package rel: the row naming it
// exactly, else the one pattern row that matches it.
func rowFor(rs *rules, rel, doc string) (*row, *problem) {
	var exact, wild []*row
	for _, r := range rs.rows {
		for _, p := range r.packages {
			if !p.match(rel) {
				continue
			}
			if p.wild {
				wild = append(wild, r)
			} else {
				exact = append(exact, r)
			}
			break
		}
	}
	cands := exact
	if len(cands) == 0 {
		cands = wild
	}
	switch len(cands) {
	case 0:
		return nil, &problem{rel, fmt.Sprintf("no row of the packages table in %s names this package", doc)}
	case 1:
		return cands[0], nil
	default:
		return nil, &problem{rel, fmt.Sprintf("rows %s and %s both name this package", cands[0].name(doc), cands[1].name(doc))}
	}
}

// checkImports holds each package's imports against its row. A module
// package must be allowed by the row; a third-party package only when some
// row of the table names it (then only those rows may import it); the
// standard library always.
//
// It also returns the allowances of module packages that no import uses,
// for whoever tightens the table.
func checkImports(rs *rules, module string, pkgs []*pkg, doc, root string) (probs []problem, unused []string, err error) {
	known := map[string]bool{}
	for _, p := range pkgs {
		known[p.rel] = true
	}
	// A row or an allowance naming no package of the module is stale: the
	// table must say what is, not what was.
	for _, r := range rs.rows {
		for _, list := range [][]pattern{r.packages, r.imports, r.tests} {
			for _, pat := range list {
				if pat.thirdParty || matchesAny(pat, known) {
					continue
				}
				probs = append(probs, problem{r.name(doc), fmt.Sprintf("%s names no package of the module", pat.text)})
			}
		}
	}
	used := map[*pattern]use{}
	claimed := func(path string) bool {
		for _, r := range rs.rows {
			if allowed(r.imports, path) || allowed(r.tests, path) {
				return true
			}
		}
		return false
	}
	for _, p := range pkgs {
		r, prob := rowFor(rs, p.rel, doc)
		if prob != nil {
			probs = append(probs, *prob)
			continue
		}
		uses, err := readImports(module, p)
		if err != nil {
			return nil, nil, err
		}
		for _, u := range uses {
			if u.std || (u.own && u.path == p.rel) {
				continue
			}
			if !u.own && !claimed(u.path) {
				continue
			}
			if allow(r.imports, u, used) || (u.test && allow(r.tests, u, used)) {
				continue
			}
			who, col := p.rel+" imports", fmt.Sprintf("%q", colImports)
			if u.test {
				who, col = p.rel+"'s tests import", fmt.Sprintf("%q or %q", colImports, colTests)
			}
			probs = append(probs, problem{
				where: relPos(root, u.pos),
				msg:   fmt.Sprintf("%s %s, which is not in %s of %s", who, u.path, col, r.name(doc)),
			})
		}
	}
	sort.SliceStable(probs, func(i, j int) bool { return probs[i].where < probs[j].where })
	for _, r := range rs.rows {
		for i := range r.imports {
			switch p := &r.imports[i]; {
			case p.thirdParty:
			case used[p] == notUsed:
				unused = append(unused, fmt.Sprintf("%s: %s is allowed and not imported", r.name(doc), p.text))
			case used[p] == usedByTests:
				unused = append(unused, fmt.Sprintf("%s: %s is in %q and only its tests import it", r.name(doc), p.text, colImports))
			}
		}
		for i := range r.tests {
			if p := &r.tests[i]; !p.thirdParty && used[p] == notUsed {
				unused = append(unused, fmt.Sprintf("%s: %s is allowed and not imported", r.name(doc), p.text))
			}
		}
	}
	return probs, unused, nil
}

// use is how far an allowance is used.
type use int

const (
	notUsed use = iota
	usedByTests
	usedByCode
)

// allow is allowed, noting who used the pattern that allowed u.
func allow(list []pattern, u importUse, used map[*pattern]use) bool {
	for i := range list {
		if list[i].match(u.path) {
			level := usedByCode
			if u.test {
				level = usedByTests
			}
			used[&list[i]] = max(used[&list[i]], level)
			return true
		}
	}
	return false
}

func allowed(list []pattern, path string) bool {
	for _, p := range list {
		if p.match(path) {
			return true
		}
	}
	return false
}

func matchesAny(p pattern, known map[string]bool) bool {
	for k := range known {
		if p.match(k) {
			return true
		}
	}
	return false
}

func relPos(root string, pos token.Position) string {
	name := pos.Filename
	if r, err := filepath.Rel(root, name); err == nil && !strings.HasPrefix(r, "..") {
		name = r
	}
	return fmt.Sprintf("%s:%d", filepath.ToSlash(name), pos.Line)
}

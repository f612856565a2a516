package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
)

// typeCount is the number of methods declared on one named type.
type typeCount struct {
	name    string // package relative to the module, a dot, the type: "engine.Engine"
	methods int
	max     int // its limit
	line    int // the limits row that gave it
}

// countMethods counts the methods declared on each named type of pkgs, in
// the files the package builds from here (no _test.go file), and returns
// the types over their limit, most methods first. A method on T and one on
// *T count alike; methods promoted from an embedded type do not count,
// since they are written, read and tested elsewhere.
func countMethods(rs *rules, pkgs []*pkg) ([]typeCount, error) {
	var over []typeCount
	for _, p := range pkgs {
		fset := token.NewFileSet()
		counts := map[string]int{}
		for _, name := range append(append([]string(nil), p.GoFiles...), p.CgoFiles...) {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, fmt.Errorf("counting methods in %s: %w", p.rel, err)
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Recv == nil || len(fd.Recv.List) == 0 {
					continue
				}
				if t := receiverType(fd.Recv.List[0].Type); t != "" {
					counts[t]++
				}
			}
		}
		for t, n := range counts {
			l, ok := limitFor(rs, p.rel, t)
			if ok && n > l.max {
				over = append(over, typeCount{name: p.rel + "." + t, methods: n, max: l.max, line: l.line})
			}
		}
	}
	sort.Slice(over, func(i, j int) bool {
		if over[i].methods != over[j].methods {
			return over[i].methods > over[j].methods
		}
		return over[i].name < over[j].name
	})
	return over, nil
}

// receiverType is the name of the type a receiver expression names:
// T, *T, T[K] and *T[K, V] all name T.
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// limitFor is the first limits row matching the type; false when none
// does or the row says "no limit".
func limitFor(rs *rules, pkgRel, typ string) (limit, bool) {
	for _, l := range rs.limits {
		if l.pkg.match(pkgRel) && l.typ.MatchString(typ) {
			return l, l.max >= 0
		}
	}
	return limit{}, false
}

// Command archcheck holds the module to the package map in
// docs/architecture.md ("## Packages"): every package must have a row, and
// every import of a package, its _test.go files included, must be one its
// row allows. It also counts the methods of each named type against the
// limits written beside the map. It reads the document and the source and
// changes nothing; it must not import anything of the module it checks.
//
//	go run ./internal/archcheck                    # imports; method counts reported
//	go run ./internal/archcheck -methods=enforce   # method counts fail too
//	go run ./internal/archcheck -unused            # allowances no import uses, or only tests
//
// `make arch` runs it, and `make test` runs `make arch`.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command: 0 when the module follows the document, 1 when it
// does not, 2 when the check could not be made.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("archcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".", "the module's root `directory`")
	doc := fs.String("doc", "docs/architecture.md", "the document with the package map, relative to -dir")
	methods := fs.String("methods", "report", "method counts over their limit: off, report (print them) or enforce (fail)")
	unused := fs.Bool("unused", false, "also list allowances of module packages that no import uses, or only tests use")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "archcheck: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	switch *methods {
	case "off", "report", "enforce":
	default:
		fmt.Fprintf(stderr, "archcheck: -methods=%s: want off, report or enforce\n", *methods)
		return 2
	}
	root, err := filepath.Abs(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "archcheck: %v\n", err)
		return 2
	}

	f, err := os.Open(filepath.Join(root, *doc))
	if err != nil {
		fmt.Fprintf(stderr, "archcheck: %v\n", err)
		return 2
	}
	rs, err := parseDoc(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "archcheck: %s: %v\n", *doc, err)
		return 2
	}
	module, pkgs, err := listPackages(ctx, root)
	if err != nil {
		fmt.Fprintf(stderr, "archcheck: %v\n", err)
		return 2
	}

	probs, unusedList, err := checkImports(rs, module, pkgs, *doc, root)
	if err != nil {
		fmt.Fprintf(stderr, "archcheck: %v\n", err)
		return 2
	}
	docs, err := documents(root)
	if err != nil {
		fmt.Fprintf(stderr, "archcheck: %v\n", err)
		return 2
	}
	pathProbs, err := checkPaths(root, docs, *doc)
	if err != nil {
		fmt.Fprintf(stderr, "archcheck: %v\n", err)
		return 2
	}
	probs = append(probs, pathProbs...)
	failed := len(probs) > 0
	for _, p := range probs {
		fmt.Fprintln(stderr, p)
	}
	if *unused {
		for _, u := range unusedList {
			fmt.Fprintln(stdout, u)
		}
	}

	if *methods != "off" {
		over, err := countMethods(rs, pkgs)
		if err != nil {
			fmt.Fprintf(stderr, "archcheck: %v\n", err)
			return 2
		}
		out, note := stdout, " (reported; -methods=enforce fails on it)"
		if *methods == "enforce" {
			out, note = stderr, ""
			failed = failed || len(over) > 0
		}
		for _, t := range over {
			fmt.Fprintf(out, "%s has %d methods, over the %d of %s:%d%s\n", t.name, t.methods, t.max, *doc, t.line, note)
		}
	}

	if failed {
		fmt.Fprintf(stderr, "archcheck: the module does not follow %s's %q (fix the import, or the table if the design changed)\n", *doc, section)
		return 1
	}
	fmt.Fprintf(stdout, "archcheck: %d packages follow %s\n", len(pkgs), *doc)
	return 0
}

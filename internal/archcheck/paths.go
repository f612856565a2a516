package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// fileRef is a file or folder of the module named in code style in a
// document: `engine/conv/turn.go`, `platform/internal/`. A name without a
// slash (`turn.go`) is not checked outside the map, whose every file is
// named by its path from the module's root, so that a reader finds it and
// a move that forgets the map fails here.
var fileRef = regexp.MustCompile("`([A-Za-z0-9_./-]+(?:\\.go|/))`")

// checkPaths reports every file or folder named in the documents that does
// not exist. docs are paths relative to root; mapDoc is the package map,
// where a bare file name is a problem too.
func checkPaths(root string, docs []string, mapDoc string) ([]problem, error) {
	var probs []problem
	for _, doc := range docs {
		f, err := os.Open(filepath.Join(root, doc))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
		for n := 1; sc.Scan(); n++ {
			for _, m := range fileRef.FindAllStringSubmatch(sc.Text(), -1) {
				ref := m[1]
				if strings.HasPrefix(ref, ".") {
					continue // a path of the running program's (.cc-connect/…), not of the module
				}
				where := fmt.Sprintf("%s:%d", doc, n)
				if !strings.Contains(strings.TrimSuffix(ref, "/"), "/") {
					if doc == mapDoc && strings.HasSuffix(ref, ".go") && !strings.HasSuffix(ref, "_test.go") {
						probs = append(probs, problem{where, fmt.Sprintf("%s: name a file by its path from the module's root", ref)})
					}
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(ref))); err != nil {
					probs = append(probs, problem{where, fmt.Sprintf("%s names no file of the module (moved or removed? fix the document)", ref)})
				}
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", doc, err)
		}
	}
	return probs, nil
}

// documents are the module's documents whose file names are checked: the
// README and every Markdown file under docs/ but the dated history, which
// names files as they were.
func documents(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	out := []string{}
	if _, err := os.Stat(filepath.Join(root, "README.md")); err == nil {
		out = append(out, "README.md")
	}
	for _, d := range docs {
		if filepath.Base(d) == "performance-history.md" {
			continue
		}
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, err
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out, nil
}

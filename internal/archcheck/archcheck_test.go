package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPattern(t *testing.T) {
	cases := []struct {
		pattern, path string
		want          bool
	}{
		{"engine", "engine", true},
		{"engine", "engine/part", false},
		{"engine", "engines", false},
		{"cluster/...", "cluster", true},
		{"cluster/...", "cluster/internal/natstest", true},
		{"cluster/...", "clusterx", false},
		{"platform/*", "platform/slack", true},
		{"platform/*", "platform", false},
		{"platform/*", "platform/internal/replykit", false},
		{"internal/fake...", "internal/fakeapi", true},
		{"internal/fake...", "internal/fakeclaude/cmd/fakeclaude", true},
		{"internal/fake...", "internal/testenv", false},
		{"...", "anything/at/all", true},
		{"github.com/slack-go/slack/...", "github.com/slack-go/slack", true},
		{"github.com/slack-go/slack/...", "github.com/slack-go/slack/socketmode", true},
		{"github.com/slack-go/slack/...", "github.com/slack-go/slackx", false},
		{"a.b", "axb", false}, // a dot is a dot, not any character
	}
	for _, c := range cases {
		p, err := parsePattern(c.pattern)
		if err != nil {
			t.Fatalf("parsePattern(%q): %v", c.pattern, err)
		}
		if got := p.match(c.path); got != c.want {
			t.Errorf("%q matching %q = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
	for pat, want := range map[string]bool{"github.com/x/y": true, "cluster/ingress": false, "...": false, "internal/fake...": false} {
		if p, _ := parsePattern(pat); p.thirdParty != want {
			t.Errorf("%q third-party = %v, want %v", pat, p.thirdParty, want)
		}
	}
}

// baseDoc is the package map of baseTree; its rows are on fixed lines,
// which the messages name.
const baseDoc = `# Architecture

Prose the checker does not read: | not | a | rule |

## Packages

| package | owns | may import | its tests may also import | must not |
|---|---|---|---|---|
| ` + "`core`" + ` | the core | — | ` + "`testkit`" + ` | import the app |
| ` + "`app`" + ` | the app | ` + "`core`, `adapters/*`, `example.org/lib/...`" + ` | — | — |
| ` + "`adapters/*`" + ` | the adapters | ` + "`core`" + ` | — | — |
| ` + "`testkit`" + ` | test help | — | — | — |

### Method limits

| package | type | methods at most |
|---|---|---|
| ` + "`core` | `Big`" + ` | 3 |
| ` + "`testkit` | `*`" + ` | no limit: a fake |
| ` + "`...` | `*`" + ` | 2 |

## Later

| package | may import |
|---|---|
| ` + "`not` | `read`" + ` |
`

// baseTree is a small module that follows baseDoc. example.org/lib and
// example.org/free are third-party modules kept beside it (replace
// directives, so nothing is downloaded); the doc names the first only.
var baseTree = map[string]string{
	"go.mod": "module example.com/m\n\ngo 1.22\n\nrequire (\n\texample.org/lib v0.0.0\n\texample.org/free v0.0.0\n)\n\n" +
		"replace example.org/lib => ./third/lib\n\nreplace example.org/free => ./third/free\n",
	"third/lib/go.mod":      "module example.org/lib\n\ngo 1.22\n",
	"third/lib/lib.go":      "package lib\n",
	"third/lib/sub/sub.go":  "package sub\n",
	"third/free/go.mod":     "module example.org/free\n\ngo 1.22\n",
	"third/free/free.go":    "package free\n",
	"docs/architecture.md":  baseDoc,
	"core/core.go":          "package core\n\ntype Big struct{}\n\nfunc (Big) A()  {}\nfunc (*Big) B() {}\nfunc (b *Big) C() {}\n",
	"core/big_test.go":      "package core\n\nfunc (Big) D() {}\nfunc (Big) E() {}\n",
	"core/core_ext_test.go": "package core_test\n\nimport (\n\t_ \"example.com/m/core\"\n\t_ \"example.com/m/testkit\"\n)\n",
	"app/app.go":            "package app\n\nimport (\n\t_ \"example.com/m/core\"\n\t_ \"example.org/free\"\n\t_ \"example.org/lib/sub\"\n)\n",
	"adapters/one/one.go":   "package one\n\nimport _ \"example.com/m/core\"\n",
	"adapters/two/two.go":   "package two\n\nimport _ \"example.com/m/core\"\n",
	"testkit/testkit.go":    "package testkit\n\ntype Fake struct{}\n\nfunc (Fake) A() {}\nfunc (Fake) B() {}\nfunc (Fake) C() {}\n",
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name    string
		files   map[string]string // added or replaced; "" removes
		doc     func(string) string
		args    []string
		code    int
		want    []string
		notWant []string
	}{{
		name:    "a tree that follows its map passes",
		want:    []string{"archcheck: 5 packages follow docs/architecture.md"},
		notWant: []string{"methods"},
	}, {
		name:  "a forbidden import added to a package fails, naming the file, the import and the row",
		files: map[string]string{"adapters/one/bad.go": "package one\n\nimport _ \"example.com/m/app\"\n"},
		code:  1,
		want:  []string{`adapters/one/bad.go:3: adapters/one imports app, which is not in "may import" of docs/architecture.md:11 (row adapters/*)`},
	}, {
		name:  "what only a package's tests may import fails in its other files",
		files: map[string]string{"core/help.go": "package core\n\nimport _ \"example.com/m/testkit\"\n"},
		code:  1,
		want:  []string{"core/help.go:3: core imports testkit, which is not in \"may import\" of docs/architecture.md:9 (row core)"},
	}, {
		name:  "a forbidden import in a test file fails",
		files: map[string]string{"adapters/two/two_test.go": "package two_test\n\nimport _ \"example.com/m/testkit\"\n"},
		code:  1,
		want:  []string{`adapters/two/two_test.go:3: adapters/two's tests import testkit, which is not in "may import" or "its tests may also import" of docs/architecture.md:11 (row adapters/*)`},
	}, {
		name:  "a file that builds only on another system is checked too",
		files: map[string]string{"core/core_plan9.go": "package core\n\nimport _ \"example.com/m/app\"\n"},
		code:  1,
		want:  []string{"core/core_plan9.go:3: core imports app"},
	}, {
		name:  "a third-party package a row names is closed to the other rows",
		files: map[string]string{"core/lib.go": "package core\n\nimport _ \"example.org/lib\"\n"},
		code:  1,
		want:  []string{"core/lib.go:3: core imports example.org/lib, which is not in"},
	}, {
		name:  "a third-party package no row names is free",
		files: map[string]string{"core/free.go": "package core\n\nimport _ \"example.org/free\"\n"},
		want:  []string{"5 packages follow"},
	}, {
		name:  "a package without a row fails",
		files: map[string]string{"extra/extra.go": "package extra\n"},
		code:  1,
		want:  []string{"extra: no row of the packages table in docs/architecture.md names this package"},
	}, {
		name: "a row naming no package fails",
		doc: func(d string) string {
			return strings.Replace(d, "| `testkit` | test help |", "| `testkit`, `gone` | test help |", 1)
		},
		code: 1,
		want: []string{"docs/architecture.md:12 (row testkit, gone): gone names no package of the module"},
	}, {
		name: "an allowance naming no package fails",
		doc: func(d string) string {
			return strings.Replace(d, "`core`, `adapters/*`", "`core`, `adapters/*`, `gone/*`", 1)
		},
		code: 1,
		want: []string{"(row app): gone/* names no package of the module"},
	}, {
		name: "the row naming a package wins over a pattern row",
		doc: func(d string) string {
			return strings.Replace(d, "| `testkit` | test help |", "| `adapters/one` | one | `core`, `testkit` | — | — |\n| `testkit` | test help |", 1)
		},
		files: map[string]string{"adapters/one/kit.go": "package one\n\nimport _ \"example.com/m/testkit\"\n"},
		want:  []string{"5 packages follow"},
	}, {
		name: "two pattern rows matching one package fail",
		doc: func(d string) string {
			return strings.Replace(d, "| `testkit` | test help |", "| `adapters/o*` | one | `core` | — | — |\n| `testkit` | test help |", 1)
		},
		code: 1,
		want: []string{"adapters/one: rows docs/architecture.md:11 (row adapters/*) and docs/architecture.md:12 (row adapters/o*) both name this package"},
	}, {
		name: "prose in a rule cell is refused, not read as an allowance",
		doc: func(d string) string {
			return strings.Replace(d, "| — | `testkit` |", "| — | `testkit`, not `app` |", 1)
		},
		code: 2,
		want: []string{"line 9, its tests may also import: \"not `app`\""},
	}, {
		name: "a map without the tests column is refused",
		doc:  func(d string) string { return strings.Replace(d, "| its tests may also import |", "| tests |", 1) },
		code: 2,
		want: []string{`the packages table has no "its tests may also import" column`},
	}, {
		name:  "a type over the limit is reported and does not fail by default",
		files: map[string]string{"core/g.go": "package core\n\ntype G[K comparable, V any] struct{}\n\nfunc (G[K, V]) A()  {}\nfunc (*G[K, V]) B() {}\nfunc (g *G[_, _]) C() {}\n\ntype H[T any] []T\n\nfunc (H[T]) A() {}\nfunc (*H[T]) B() {}\nfunc (h H[_]) C() {}\n"},
		want:  []string{"core.G has 3 methods, over the 2 of docs/architecture.md:20 (reported; -methods=enforce fails on it)", "core.H has 3 methods, over the 2", "5 packages follow"},
	}, {
		name:  "a type over the limit fails with -methods=enforce",
		files: map[string]string{"core/g.go": "package core\n\ntype G struct{}\n\nfunc (G) A() {}\nfunc (G) B() {}\nfunc (G) C() {}\n"},
		args:  []string{"-methods=enforce"},
		code:  1,
		want:  []string{"core.G has 3 methods, over the 2 of docs/architecture.md:20\n"},
	}, {
		name:  "a type's own limit is the first row that matches it",
		files: map[string]string{"core/d.go": "package core\n\nfunc (Big) D() {}\n"},
		args:  []string{"-methods=enforce"},
		code:  1,
		want:  []string{"core.Big has 4 methods, over the 3 of docs/architecture.md:18"},
	}, {
		name:    "-methods=off counts nothing",
		files:   map[string]string{"core/d.go": "package core\n\nfunc (Big) D() {}\n"},
		args:    []string{"-methods=off"},
		notWant: []string{"methods"},
	}, {
		name:    "a document naming a file the module lacks fails",
		files:   map[string]string{"docs/guide.md": "See `core/gone.go` and `core/` and `.state/` (the program's).\n"},
		code:    1,
		want:    []string{"docs/guide.md:1: core/gone.go names no file of the module"},
		notWant: []string{"core/ names", ".state/"},
	}, {
		name:    "the map names a file by its path, not its bare name",
		doc:     func(d string) string { return d + "\nThe loop is in `loop.go`; its tests in `_test.go` files.\n" },
		code:    1,
		want:    []string{"loop.go: name a file by its path from the module's root"},
		notWant: []string{"_test.go: name"},
	}, {
		name:  "the dated history may name files as they were",
		files: map[string]string{"docs/performance-history.md": "2020: `core/old.go` was slow.\n"},
		want:  []string{"5 packages follow"},
	}, {
		name:    "-unused lists allowances no import uses",
		args:    []string{"-unused"},
		want:    []string{"docs/architecture.md:10 (row app): adapters/* is allowed and not imported"},
		notWant: []string{"(row core): testkit is allowed"},
	}, {
		name: "-unused names what only tests use in \"may import\"",
		doc:  func(d string) string { return strings.Replace(d, "| — | `testkit` |", "| `testkit` | — |", 1) },
		args: []string{"-unused"},
		want: []string{`docs/architecture.md:9 (row core): testkit is in "may import" and only its tests import it`},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			files := map[string]string{}
			for name, text := range baseTree {
				files[name] = text
			}
			for name, text := range c.files {
				files[name] = text
			}
			if c.doc != nil {
				files["docs/architecture.md"] = c.doc(baseDoc)
			}
			for name, text := range files {
				if text == "" {
					continue
				}
				path := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			code := run(context.Background(), append([]string{"-dir", dir}, c.args...), &out, &out)
			if code != c.code {
				t.Errorf("exit %d, want %d", code, c.code)
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q", w)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(out.String(), w) {
					t.Errorf("output has %q", w)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out.String())
			}
		})
	}
}

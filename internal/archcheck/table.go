package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// section is the heading whose tables are the rules. Everything else in
// the document is prose for people and is not read.
const section = "## Packages"

// A pattern names import paths: a module package relative to the module
// root (`engine`, `cluster/ingress`), or a third-party package by its full
// path (its first element has a dot). `*` matches within one path element,
// `...` matches anything, and a trailing `/...` also matches the path before
// it, as in the go command (`cluster/...` is cluster and all below it).
type pattern struct {
	text       string
	thirdParty bool
	re         *regexp.Regexp
	wild       bool
}

func parsePattern(s string) (pattern, error) {
	if s == "" || strings.ContainsAny(s, " \t|`") {
		return pattern{}, fmt.Errorf("bad pattern %q", s)
	}
	re := regexp.QuoteMeta(s)
	re = strings.ReplaceAll(re, `\.\.\.`, `.*`)
	re = strings.ReplaceAll(re, `\*`, `[^/]*`)
	if strings.HasSuffix(re, `/.*`) {
		re = strings.TrimSuffix(re, `/.*`) + `(/.*)?`
	}
	first, _, _ := strings.Cut(s, "/")
	return pattern{
		text:       s,
		thirdParty: strings.Contains(strings.ReplaceAll(first, "...", ""), "."),
		re:         regexp.MustCompile("^" + re + "$"),
		wild:       strings.Contains(s, "*") || strings.Contains(s, "..."),
	}, nil
}

func (p pattern) match(path string) bool { return p.re.MatchString(path) }

// A row is one line of the packages table: the packages it governs, what
// they may import, and what their _test.go files may import besides.
type row struct {
	line     int // in the document, for messages
	packages []pattern
	imports  []pattern
	tests    []pattern
}

// name is how messages point at a row: its line and its package cell.
func (r *row) name(doc string) string {
	var names []string
	for _, p := range r.packages {
		names = append(names, p.text)
	}
	return fmt.Sprintf("%s:%d (row %s)", doc, r.line, strings.Join(names, ", "))
}

// A limit is one line of the method limits table; the first whose package
// and type patterns match a type gives its limit (max < 0: no limit).
type limit struct {
	line int
	pkg  pattern
	typ  *regexp.Regexp
	max  int
}

// rules is what the document says.
type rules struct {
	rows   []*row
	limits []limit
}

// Column headers, matched case-insensitively; the tables' other columns
// (what a package owns, what it must not do) are for people.
const (
	colPackage = "package"
	colImports = "may import"
	colTests   = "its tests may also import"
	colType    = "type"
	colMethods = "methods at most"
)

// parseDoc reads the tables under the Packages heading: the one with a
// "may import" column is the import map, the one with a "methods at most"
// column the method limits.
func parseDoc(r io.Reader) (*rules, error) {
	var (
		out       rules
		inSection bool
		header    map[string]int // column name → index, while in a table
		isLimits  bool
		sawMap    bool
		sawLimits bool
		lineNo    int
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			// The section runs to the next heading of its level or above;
			// its subsections belong to it.
			level := len(line) - len(strings.TrimLeft(line, "#"))
			if line == section {
				inSection = true
			} else if level <= 2 {
				inSection = false
			}
			header = nil
			continue
		}
		if !inSection {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			header = nil
			continue
		}
		cells := splitRow(line)
		if header == nil {
			header = map[string]int{}
			for i, c := range cells {
				header[strings.ToLower(c)] = i
			}
			_, isMap := header[colImports]
			_, isLimits = header[colMethods]
			switch {
			case isMap && !sawMap:
				sawMap = true
				for _, c := range []string{colPackage, colTests} {
					if _, ok := header[c]; !ok {
						return nil, fmt.Errorf("line %d: the packages table has no %q column", lineNo, c)
					}
				}
			case isLimits && !sawLimits:
				sawLimits = true
				for _, c := range []string{colPackage, colType} {
					if _, ok := header[c]; !ok {
						return nil, fmt.Errorf("line %d: the method limits table has no %q column", lineNo, c)
					}
				}
			case isMap || isLimits:
				return nil, fmt.Errorf("line %d: a second %q or %q table under %q", lineNo, colImports, colMethods, section)
			default:
				header = map[string]int{} // a table of another kind: skip it
			}
			continue
		}
		if len(header) == 0 || isDelimiter(cells) {
			continue
		}
		if len(cells) != len(header) {
			return nil, fmt.Errorf("line %d: %d cells, the header has %d", lineNo, len(cells), len(header))
		}
		if isLimits {
			l, err := parseLimit(lineNo, cells[header[colPackage]], cells[header[colType]], cells[header[colMethods]])
			if err != nil {
				return nil, err
			}
			out.limits = append(out.limits, l)
			continue
		}
		rw := &row{line: lineNo}
		var err error
		if rw.packages, err = parseList(cells[header[colPackage]]); err != nil {
			return nil, fmt.Errorf("line %d, %s: %w", lineNo, colPackage, err)
		}
		if len(rw.packages) == 0 {
			return nil, fmt.Errorf("line %d: a row without a package", lineNo)
		}
		for _, p := range rw.packages {
			if p.thirdParty {
				return nil, fmt.Errorf("line %d: %s is not a package of the module", lineNo, p.text)
			}
		}
		if rw.imports, err = parseList(cells[header[colImports]]); err != nil {
			return nil, fmt.Errorf("line %d, %s: %w", lineNo, colImports, err)
		}
		if rw.tests, err = parseList(cells[header[colTests]]); err != nil {
			return nil, fmt.Errorf("line %d, %s: %w", lineNo, colTests, err)
		}
		out.rows = append(out.rows, rw)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !sawMap {
		return nil, fmt.Errorf("no table with a %q column under %q", colImports, section)
	}
	if !sawLimits {
		return nil, fmt.Errorf("no table with a %q column under %q", colMethods, section)
	}
	return &out, nil
}

// splitRow splits a Markdown table line into trimmed cells; `\|` stays in
// its cell.
func splitRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

func isDelimiter(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, ":-") != "" {
			return false
		}
	}
	return true
}

// parseList reads a cell that is either empty ("—", "-" or nothing) or a
// list of patterns, each in backticks, separated by commas. Anything else
// is an error rather than ignored, so that prose such as "not `x`" in a
// rule cell cannot silently allow x.
func parseList(cell string) ([]pattern, error) {
	if cell == "" || cell == "—" || cell == "-" {
		return nil, nil
	}
	var out []pattern
	for _, item := range strings.Split(cell, ",") {
		item = strings.TrimSpace(item)
		if len(item) < 3 || item[0] != '`' || item[len(item)-1] != '`' || strings.Count(item, "`") != 2 {
			return nil, fmt.Errorf("%q: want `pattern`, `pattern`, … or —", item)
		}
		p, err := parsePattern(item[1 : len(item)-1])
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func parseLimit(lineNo int, pkgCell, typCell, maxCell string) (limit, error) {
	unquote := func(c string) (string, error) {
		if len(c) < 3 || c[0] != '`' || c[len(c)-1] != '`' || strings.Count(c, "`") != 2 {
			return "", fmt.Errorf("line %d: %q: want one `pattern`", lineNo, c)
		}
		return c[1 : len(c)-1], nil
	}
	ps, err := unquote(pkgCell)
	if err != nil {
		return limit{}, err
	}
	pkg, err := parsePattern(ps)
	if err != nil {
		return limit{}, fmt.Errorf("line %d: %w", lineNo, err)
	}
	ts, err := unquote(typCell)
	if err != nil {
		return limit{}, err
	}
	typ, err := parsePattern(ts)
	if err != nil || strings.Contains(ts, "/") {
		return limit{}, fmt.Errorf("line %d: bad type pattern %q", lineNo, ts)
	}
	l := limit{line: lineNo, pkg: pkg, typ: typ.re, max: -1}
	if !strings.HasPrefix(strings.ToLower(maxCell), "no limit") {
		if l.max, err = strconv.Atoi(maxCell); err != nil || l.max < 0 {
			return limit{}, fmt.Errorf("line %d: %q: want a number of methods or \"no limit\"", lineNo, maxCell)
		}
	}
	return l, nil
}

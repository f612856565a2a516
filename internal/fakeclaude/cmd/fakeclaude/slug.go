package main

import (
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf16"
)

// The fake keeps its own copy of where the CLI puts transcripts, written
// from the CLI's behaviour (PROTOCOL.md §6), not taken from agentproc: the
// fake is what agentproc's transcript lookups are checked against, so a
// wrong rule there must make a test fail rather than agree with itself.

// configDirOf is the CLI's configuration directory: CLAUDE_CONFIG_DIR when
// set, else ~/.claude. An empty CLAUDE_CONFIG_DIR is a path like any other:
// the CLI resolves "" to its working directory and keeps its config and
// transcripts there (seen on 2.1.328 and 2.1.332).
func configDirOf(cwd string) string {
	if d, ok := os.LookupEnv("CLAUDE_CONFIG_DIR"); ok {
		if d == "" {
			return cwd
		}
		return d
	}
	home := os.Getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".claude")
}

// projectFolder names a working directory's folder under projects/: each
// UTF-16 unit that is not an ASCII letter or digit becomes '-', and past 200
// units the name is cut there and gets "-" and a base-36 hash of the path
// (the JavaScript (h<<5)-h+c over UTF-16 units, as int32, made positive).
func projectFolder(cwd string) string {
	units := utf16.Encode([]rune(cwd))
	name := make([]rune, 0, len(units))
	for _, u := range units {
		r := rune(u)
		if ('0' <= r && r <= '9') || ('A' <= r && r <= 'Z') || ('a' <= r && r <= 'z') {
			name = append(name, r)
		} else {
			name = append(name, '-')
		}
	}
	if len(name) <= 200 {
		return string(name)
	}
	var h int32
	for _, u := range units {
		h = (h << 5) - h + int32(u)
	}
	n := int64(h)
	if n < 0 {
		n = -n
	}
	return string(name[:200]) + "-" + strconv.FormatInt(n, 36)
}

package agentproc

// Read-only helpers over the transcripts Claude Code keeps under its config
// directory. cc-connect never writes these files: the CLI owns them, and a
// second writer would corrupt the parentUuid chain the CLI walks on resume.

import (
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf16"
)

// slugMaxLen is where the CLI stops keeping the sanitized path verbatim and
// appends a hash instead, so that long paths still fit a file name.
const slugMaxLen = 200

// ProjectSlug is the name of the folder under <config>/projects that holds
// the transcripts of sessions started in path. It follows the CLI's rule
// exactly: every UTF-16 code unit outside [A-Za-z0-9] becomes '-' (so a
// surrogate pair gives two dashes), and a slug longer than 200 units keeps
// its first 200 followed by "-" and the base36 of the absolute Java-style
// hash of the unsanitized path. path is used as given; resolve symlinks
// first (TranscriptPath does) because the CLI names projects by real path.
func ProjectSlug(path string) string {
	units := utf16.Encode([]rune(path))
	slug := make([]byte, len(units))
	for i, u := range units {
		if u < 0x80 && isAlnum(byte(u)) {
			slug[i] = byte(u)
		} else {
			slug[i] = '-'
		}
	}
	if len(slug) <= slugMaxLen {
		return string(slug)
	}
	return string(slug[:slugMaxLen]) + "-" + strconv.FormatInt(absInt32(javaHash(units)), 36)
}

// javaHash is String.hashCode over UTF-16 units: h = 31*h + unit, wrapping
// at 32 bits, the same as the CLI's (h<<5)-h+charCode with int32 coercion.
func javaHash(units []uint16) int32 {
	var h int32
	for _, u := range units {
		h = h*31 + int32(u)
	}
	return h
}

// absInt32 widens before negating so that MinInt32 gives 2147483648, as
// JavaScript's Math.abs does on the int32 value.
func absInt32(h int32) int64 {
	v := int64(h)
	if v < 0 {
		return -v
	}
	return v
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ConfigDir is the Claude Code configuration directory the agent will use:
// CLAUDE_CONFIG_DIR from env (the extra environment given to the agent),
// then from this process's environment, else $HOME/.claude, where HOME is
// taken from env first because that is the home the agent will see. An empty
// value counts as unset, as it does for the CLI.
func ConfigDir(env map[string]string) string {
	if d := env["CLAUDE_CONFIG_DIR"]; d != "" {
		return d
	}
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	home := env["HOME"]
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".claude")
}

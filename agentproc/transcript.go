package agentproc

// Read-only helpers over the transcripts Claude Code keeps under its config
// directory. cc-connect never writes these files: the CLI owns them, and a
// second writer would corrupt the parentUuid chain the CLI walks on resume.

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/cc-connect/cc-connect/launch"
	"github.com/cc-connect/cc-connect/workspace"
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
		if u < 0x80 && slugKeeps(byte(u)) {
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

// slugKeeps reports whether the CLI keeps c as it is in a slug.
func slugKeeps(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ConfigDir is the Claude Code configuration directory the agent will use:
// CLAUDE_CONFIG_DIR from env (the extra environment given to the agent),
// then from this process's environment, else $HOME/.claude, where HOME is
// taken from env first because that is the home the agent will see. An empty
// value counts as unset: BuildEnv drops it, since the CLI itself would take
// "" for its working directory. An empty value in env also hides this
// process's, as it replaces it in the agent's environment.
func ConfigDir(env map[string]string) string {
	d, ok := env["CLAUDE_CONFIG_DIR"]
	if !ok {
		d = os.Getenv("CLAUDE_CONFIG_DIR")
	}
	if d != "" {
		return d
	}
	home := env["HOME"]
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".claude")
}

// ProjectsDir is where the CLI keeps one folder of transcripts per project.
func ProjectsDir(configDir string) string {
	return filepath.Join(configDir, "projects")
}

// ProjectDir is the folder holding the transcripts of sessions started in
// cwd. cwd is made absolute and its symlinks resolved when it exists,
// because the CLI names a project by the real path of its working directory.
func ProjectDir(configDir, cwd string) string {
	return filepath.Join(ProjectsDir(configDir), ProjectSlug(workspace.Normalize(cwd, nil)))
}

// TranscriptPath is where the CLI writes the transcript of a session it
// started in cwd. A session resumed from another directory keeps writing to
// this first file, so use FindTranscript when cwd may have changed.
func TranscriptPath(configDir, cwd, sessionID string) string {
	return filepath.Join(ProjectDir(configDir, cwd), sessionID+".jsonl")
}

// FindTranscript locates the transcript of sessionID and returns its path
// and size. The paths expected for the given working directories (in
// order) are tried first; then every project folder is searched for
// <sessionID>.jsonl, since a session resumed from another cwd keeps its
// original project's file. When several folders hold one (a copied config
// dir), the most recently written wins.
//
// A missing transcript gives an error wrapping fs.ErrNotExist whose text
// names where it looked, and the path first expected (empty without a cwd),
// so callers can log the lookup.
func FindTranscript(configDir, sessionID string, cwds ...string) (path string, size int64, err error) {
	if !validSessionID(sessionID) {
		return "", 0, fmt.Errorf("finding transcript: invalid session id %q", sessionID)
	}
	var expected string
	for _, cwd := range cwds {
		p := TranscriptPath(configDir, cwd, sessionID)
		if expected == "" {
			expected = p
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, fi.Size(), nil
		}
	}

	projects := ProjectsDir(configDir)
	entries, err := os.ReadDir(projects)
	if err != nil {
		return expected, 0, fmt.Errorf("finding transcript of session %s in %s: %w", sessionID, projects, err)
	}
	name := sessionID + ".jsonl"
	var best os.FileInfo
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(projects, e.Name(), name)
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if best == nil || fi.ModTime().After(best.ModTime()) {
			best, path = fi, p
		}
	}
	if best == nil {
		return expected, 0, fmt.Errorf("finding transcript of session %s: no %s under %s: %w", sessionID, name, projects, fs.ErrNotExist)
	}
	return path, best.Size(), nil
}

// validSessionID rejects ids that would escape the project folder once
// used as a file name. The CLI's ids are UUIDs; anything without a path
// separator is accepted so that odd ids still fail as "not found".
func validSessionID(id string) bool {
	return id != "" && id != "." && id != ".." && !strings.ContainsAny(id, `/\`+"\x00")
}

// PlaceTranscript writes data as the transcript of sessionID started in
// cwd, where the CLI's --resume finds it: a session taken over from
// another host. It refuses an id that is not a session id, and a file the
// CLI already keeps for that id (its own history wins) unless replace:
// another host answered in that session since this host's last turn, so
// the replicated transcript is the newer one. A link there is refused
// either way.
func PlaceTranscript(configDir, cwd, sessionID string, data []byte, replace bool) error {
	if !ValidSessionID(sessionID) {
		return fmt.Errorf("placing a transcript: invalid session id %q", sessionID)
	}
	path := TranscriptPath(configDir, cwd, sessionID)
	if fi, err := os.Lstat(path); err == nil && (!replace || !fi.Mode().IsRegular()) {
		return fmt.Errorf("placing the transcript of session %s: %s exists", sessionID, path)
	}
	return workspace.WriteFileAtomic(path, data)
}

// placeScript writes its stdin to $2 in the folder $1 (made 0700 when
// missing), through a temporary file renamed into place, refusing a $2
// that exists (unless $3 is "replace" and $2 is a regular file); run as
// the agent's user.
const placeScript = `set -e
umask 077
mkdir -p -- "$1"
if [ -L "$2" ] || { [ -e "$2" ] && { [ "$3" != replace ] || [ ! -f "$2" ]; }; }; then echo "$2 exists" >&2; exit 3; fi
t="$2.cc-connect-$$"
cat > "$t"
mv -f -- "$t" "$2"`

// PlaceTranscriptFor is PlaceTranscript into the config directory of the
// agent cfg starts. When the agent runs as another user (agent.user), the
// file is written by a child running as that user (through the launcher):
// the folder is the agent's, and cc-connect, root then, writes nothing in
// a folder another user controls, where a link could redirect the write.
func PlaceTranscriptFor(ctx context.Context, cfg Config, cwd, sessionID string, data []byte, replace bool) error {
	configDir := ConfigDirFor(cfg)
	if !cfg.switchesUser() {
		return PlaceTranscript(configDir, cwd, sessionID, data, replace)
	}
	mode := ""
	if replace {
		mode = "replace"
	}
	if !ValidSessionID(sessionID) {
		return fmt.Errorf("placing a transcript: invalid session id %q", sessionID)
	}
	path := TranscriptPath(configDir, cwd, sessionID)
	var stderr strings.Builder
	err := launch.Run(ctx, cfg.Rule(), launch.Spec{Path: "sh", Args: []string{"-c", placeScript, "sh", filepath.Dir(path), path, mode},
		Dir: "/", Stdin: bytes.NewReader(data), Stderr: &stderr})
	if err != nil {
		return fmt.Errorf("placing the transcript of session %s as %s: %w (%s)", sessionID, cfg.User.Name, err,
			strings.TrimSpace(stderr.String()))
	}
	return nil
}

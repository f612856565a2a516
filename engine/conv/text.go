package conv

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/render"
)

// Small text helpers for what the engine posts and logs.

func exitDescription(e *agentproc.ExitError) string {
	if e.Signal != "" {
		return "was killed by " + e.Signal
	}
	return fmt.Sprintf("exited (code %d)", e.Code)
}

func resultDetail(out outcome) string {
	if out.res != nil && out.res.Text != "" {
		return " (" + Quote(out.res.Text, 200) + ")"
	}
	return ""
}

// lastLine is the last non-empty line of s, trimmed and bounded.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return Quote(l, 300)
		}
	}
	return ""
}

// Quote is s cut to n characters for a notice or a log, on one line
// (render.Quote).
func Quote(s string, n int) string { return render.Quote(s, n) }

// humanSize is a byte count as a person reads it (render.Size).
func humanSize(n int64) string { return render.Size(n) }

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func orNone(s string) string { return orDefault(s, "no error output") }

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// newUUID is a fresh random uuid (a message's, a new session's).
func newUUID() string { return uuid.NewString() }

// forChat is text made from an error (or a process's stderr) as the chat
// may read it. Everyone in the thread reads it, so host paths go: the
// workspace, the state dir and the home dir are named for what they are,
// any other absolute path becomes <path>. The log keeps the error whole.
func (s *Conversation) forChat(text string) string { return forChat(text, s.ws, s.e.opts.StateDir) }

// forChat is session.forChat for the turn runner's texts.
func (tr *turnRunner) forChat(text string) string { return forChat(text, tr.ws, tr.e.opts.StateDir) }

func forChat(text, ws, stateDir string) string {
	roots := []struct{ path, name string }{
		{ws, "<workspace>"},
		{stateDir, "<state dir>"},
	}
	if home, err := os.UserHomeDir(); err == nil {
		roots = append(roots, struct{ path, name string }{home, "~"})
	}
	// Longest first: the workspace may lie inside the home dir.
	sort.Slice(roots, func(i, j int) bool { return len(roots[i].path) > len(roots[j].path) })
	for _, r := range roots {
		if len(r.path) > 1 {
			text = strings.ReplaceAll(text, r.path, r.name)
		}
	}
	return redactPaths(text)
}

// redactPaths replaces every absolute path of two elements or more in
// text (a "/" that starts a word, as after a space, a quote or a
// parenthesis, and one more "/" in it) with <path>. A single element is
// left alone: it is Claude Code's slash command ("Please run /login") far
// more often than a folder worth hiding, and the workspace, state dir and
// home have been named already. A URL's "//" is left alone too.
func redactPaths(text string) string {
	var b strings.Builder
	for i := 0; i < len(text); {
		c := text[i]
		startsWord := i == 0 || strings.IndexByte(" \t\n\"'`([{=,:", text[i-1]) >= 0
		if c != '/' || !startsWord || strings.HasPrefix(text[i:], "//") {
			b.WriteByte(c)
			i++
			continue
		}
		j := pathEnd(text, i)
		// A path ends before a trailing colon, full stop or comma of the
		// prose.
		for j > i+1 && strings.IndexByte(":.,;", text[j-1]) >= 0 {
			j--
		}
		if !strings.Contains(text[i+1:j], "/") {
			b.WriteByte(c) // a lone slash, or one element: /login
			i++
			continue
		}
		b.WriteString("<path>")
		i = j
	}
	return b.String()
}

// pathEnd is where the path that starts at text[i] ends. It ends at a
// line break, a quote or a closing bracket, and at a comma or semicolon
// followed by a space (prose); a comma inside a name does not end it. It
// goes on over a space when the next word has a "/" inside it (a folder
// named with a space: "/home/me/My Projects/app"): hiding a word of prose
// too many is the safe side, leaving part of a host path is not.
func pathEnd(text string, i int) int {
	j := i + 1
	for j < len(text) {
		c := text[j]
		switch {
		case strings.IndexByte("\t\n\"'`)]}", c) >= 0:
			return j
		case c == ',' || c == ';':
			if j+1 == len(text) || strings.IndexByte(" \t\n", text[j+1]) >= 0 {
				return j
			}
		case c == ' ':
			w := text[j+1:]
			if k := strings.IndexAny(w, " \t\n\"'`)]}"); k >= 0 {
				w = w[:k]
			}
			if w == "" || w[0] == '/' || !strings.Contains(w, "/") || strings.Contains(w, "://") {
				return j
			}
		}
		j++
	}
	return j
}

package engine

import (
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/cc-connect/cc-connect/agentproc"
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
		return " (" + quote(out.res.Text, 200) + ")"
	}
	return ""
}

// lastLine is the last non-empty line of s, trimmed and bounded.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return quote(l, 300)
		}
	}
	return ""
}

func quote(s string, n int) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return string(r)
}

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

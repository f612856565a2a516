package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/workspace"
)

// Filter selects events; its zero value selects all.
type Filter struct {
	// Conversation is a conversation's key (platform/channel/thread), or
	// the start of keys up to a '/' ("slack/C123": every thread of a
	// channel).
	Conversation string
	// User is a user's id or name (case ignored).
	User string
	// Since and Until bound the events' time (Until excluded); zero: no
	// bound.
	Since, Until time.Time
	// Kinds, when set, are the kinds kept.
	Kinds []activity.Kind
}

// Match reports whether f selects e.
func (f Filter) Match(e activity.Event) bool {
	if c := strings.TrimSuffix(f.Conversation, "/"); c != "" && e.Conversation != c && !strings.HasPrefix(e.Conversation, c+"/") {
		return false
	}
	if f.User != "" && !strings.EqualFold(e.User, f.User) && !strings.EqualFold(e.UserName, f.User) {
		return false
	}
	if !f.Since.IsZero() && e.Time.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && !e.Time.Before(f.Until) {
		return false
	}
	return len(f.Kinds) == 0 || slices.Contains(f.Kinds, e.Kind)
}

// Files lists the trail's files that exist, oldest first.
func Files(path string) []string {
	var out []string
	for i := 1; ; i++ {
		if _, err := os.Lstat(OldPath(path, i)); err != nil {
			break
		}
		out = append(out, OldPath(path, i))
	}
	slices.Reverse(out)
	if _, err := os.Lstat(path); err == nil {
		out = append(out, path)
	}
	return out
}

// Read calls fn with each event of the trail at path that f selects,
// oldest first, across the rotated files. Lines that do not parse (a
// write cut short by a crash) are skipped and counted in bad. A trail
// that does not exist yet has no events.
func Read(path string, f Filter, fn func(activity.Event) error) (bad int, err error) {
	for _, p := range Files(path) {
		n, err := readFile(p, f, fn)
		bad += n
		if err != nil {
			return bad, err
		}
	}
	return bad, nil
}

func readFile(path string, f Filter, fn func(activity.Event) error) (bad int, err error) {
	file, err := workspace.OpenFileNoFollow(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil // rotated away meanwhile
	}
	if err != nil {
		return 0, fmt.Errorf("reading the audit trail: %w", err)
	}
	defer file.Close()
	r := bufio.NewReader(file)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var e activity.Event
			if json.Unmarshal(line, &e) != nil || e.Kind == "" {
				bad++
			} else if f.Match(e) {
				if err := fn(e); err != nil {
					return bad, err
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return bad, nil
		}
		if err != nil {
			return bad, fmt.Errorf("reading %s: %w", path, err)
		}
	}
}

// Format renders e as one readable line: its time (UTC), its kind, the
// conversation, who, and what.
func Format(e activity.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %-9s", e.Time.UTC().Format(time.RFC3339), e.Kind)
	if where := orDefault(e.Conversation, e.Binding); where != "" {
		b.WriteString("  " + where)
	}
	if who := person(e); who != "" {
		b.WriteString("  " + who)
	}
	var what []string
	add := func(label, v string) {
		if v != "" {
			what = append(what, label+oneLine(v))
		}
	}
	add("host ", e.Host)
	add("", e.Tool)
	add("", e.Input)
	add("", e.Text)
	add("→ ", e.Choice)
	add("", e.Outcome)
	if len(what) > 0 {
		b.WriteString(": " + strings.Join(what, " "))
	}
	return b.String()
}

func person(e activity.Event) string {
	switch {
	case e.UserName != "" && e.User != "" && e.UserName != e.User:
		return e.UserName + " (" + e.User + ")"
	case e.User != "":
		return e.User
	}
	return e.UserName
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

package render

import (
	"fmt"
	"strings"
	"time"
)

// What a running turn shows besides its reply: the status line, under it
// (progress = "verbose") the compact log of its tool calls and Claude's
// todo list, the reply while it is written, and the notices of a turn
// that went quiet, ran too long or was cut off.

// ToolState is how far a tool call has got.
type ToolState int

// A tool call runs, then is done or failed.
const (
	ToolRunning ToolState = iota
	ToolDone
	ToolFailed
)

// ToolCall is one line of the tool log.
type ToolCall struct {
	Summary string // ToolSummary's line
	State   ToolState
}

// MaxLogLines is how many tool calls the log shows: the last ones.
const MaxLogLines = 12

// ToolLog is the log of a turn's tool calls as shown, within limit runes.
func ToolLog(calls []ToolCall, limit int) string {
	var lines []string
	from := max(0, len(calls)-MaxLogLines)
	if from > 0 {
		lines = append(lines, fmt.Sprintf("_… %d earlier tool calls_", from))
	}
	for _, c := range calls[from:] {
		mark := "⏳"
		switch c.State {
		case ToolDone:
			mark = "✓"
		case ToolFailed:
			mark = "✗"
		}
		lines = append(lines, mark+" "+c.Summary)
	}
	return Quote("🔧 **Tools**\n"+strings.Join(lines, "\n"), limit)
}

// TodoItem is one item of Claude's todo list.
type TodoItem struct {
	Text string
	// Active is the item's text while it is in progress ("Running the
	// tests"); "" shows Text.
	Active string
	// Status is the CLI's: pending, in_progress or completed.
	Status string
}

// Checklist is Claude's todo list as shown, within limit runes.
func Checklist(items []TodoItem, limit int) string {
	lines := []string{"📝 **Todo**"}
	for _, it := range items {
		switch it.Status {
		case "completed":
			lines = append(lines, "☑ ~"+escapeMD(chatText(it.Text, 200))+"~")
		case "in_progress":
			lines = append(lines, "▶ **"+escapeMD(chatText(orDefault(it.Active, it.Text), 200))+"**")
		default:
			lines = append(lines, "☐ "+escapeMD(chatText(it.Text, 200)))
		}
	}
	return Quote(strings.Join(lines, "\n"), limit)
}

// Progress is what a turn's status message shows.
type Progress struct {
	// Status is the line that says what Claude does now.
	Status string
	// Verbose shows the tool log and the checklist under it, each within
	// half of MessageLimit (the platform's message size).
	Verbose      bool
	Tools        []ToolCall
	Todo         []TodoItem
	MessageLimit int
	// Background are the background tasks running (their descriptions),
	// shown under the status line at every level but quiet.
	Background []string
}

// ProgressText is the status message: the status line, the background
// tasks running, and verbose, the tool log and the checklist under it.
func ProgressText(p Progress) string {
	status := p.Status
	if bg := BackgroundRunning(p.Background); bg != "" {
		status = strings.TrimLeft(status+"\n"+bg, "\n")
	}
	if !p.Verbose {
		return status
	}
	parts := []string{status}
	half := max(200, p.MessageLimit/2-50)
	if len(p.Tools) > 0 {
		parts = append(parts, ToolLog(p.Tools, half))
	}
	if len(p.Todo) > 0 {
		parts = append(parts, Checklist(p.Todo, half))
	}
	return strings.Join(parts, "\n\n")
}

// Running is the status line while a tool runs (summary: ToolSummary).
func Running(summary string) string { return "Running: " + summary }

// Streaming is a reply while it is written, as posted: a code block left
// open so far is closed (so that a part never breaks one), and a mark
// says more is coming.
func Streaming(s string) string {
	s = strings.TrimRight(s, " \t\n")
	if s == "" {
		return ""
	}
	if fence, open := openFence(s); open {
		s += "\n" + fence
	}
	return s + "\n" + moreMark
}

// moreMark ends a reply that is still being written.
const moreMark = "…"

// Unfinished is a streamed reply of a turn that failed: the text so far,
// marked as unfinished instead of with the mark that more is coming (the
// failure's notice follows it); "" when nothing was written.
func Unfinished(s string) string {
	text := strings.TrimSuffix(Streaming(s), "\n"+moreMark)
	if text == "" {
		return ""
	}
	return text + "\n\n" + FailedText
}

// openFence reports whether s ends inside a fenced code block, and the
// fence that closes it.
func openFence(s string) (string, bool) {
	fence := ""
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimLeft(line, " ")
		if !strings.HasPrefix(t, "```") && !strings.HasPrefix(t, "~~~") {
			continue
		}
		mark := t[:3]
		n := len(t) - len(strings.TrimLeft(t, mark[:1]))
		switch {
		case fence == "":
			fence = strings.Repeat(mark[:1], n)
		case n >= len(fence) && strings.TrimSpace(t[n:]) == "" && t[0] == fence[0]:
			fence = ""
		}
	}
	return fence, fence != ""
}

// FailedText ends what a streamed reply of a failed turn showed: no final
// text replaces it, and it must not read as a reply that was finished.
const FailedText = "_(The turn failed before this reply was finished; see below.)_"

// CutOffText replaces what a reply streamed before a restart showed, when
// no final text goes there (the turn runs again, or its reply is lost).
const CutOffText = "_(This reply was cut off before it was finished; see below.)_"

// SeeBelow marks a streamed message the final reply does not use, where
// the platform cannot delete it.
const SeeBelow = "_(see the reply below)_"

// Stalled tells the thread that claude has sent nothing for quiet; doing
// is what the turn did last ("running Bash `make`").
func Stalled(quiet time.Duration, doing string) string {
	return fmt.Sprintf("⏳ No word from Claude for %s; it was last %s. It may still be working: send `!stop` to stop the turn (the session is kept).",
		quiet.Round(time.Second), doing)
}

// OverTime tells the thread a turn was stopped at max_turn_time.
func OverTime(limit time.Duration) string {
	return fmt.Sprintf("⏱ This turn ran longer than %s (max_turn_time), so it was stopped. The session is kept.", limit)
}

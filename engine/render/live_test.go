package render

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestToolSummary(t *testing.T) {
	tests := []struct{ name, input, want string }{
		{"Bash", `{"command":"go test ./...","description":"Run the tests"}`, "Bash `go test ./...`"},
		{"Read", `{"file_path":"main.go"}`, "Read `main.go`"},
		{"Grep", `{"pattern":"TODO"}`, "Grep `TODO`"},
		{"TodoWrite", `{"todos":[]}`, "TodoWrite"},
		{"Bash", `{"command":"echo ` + "`x`" + `\u202e"}`, "Bash `echo 'x'⟨U+202E⟩`"},
		{"Bash", `{"command":"` + strings.Repeat("a", 200) + `"}`, "Bash `" + strings.Repeat("a", 120) + "…`"},
	}
	for _, tt := range tests {
		if got := ToolSummary(tt.name, json.RawMessage(tt.input)); got != tt.want {
			t.Errorf("ToolSummary(%s, %s) = %q, want %q", tt.name, tt.input, got, tt.want)
		}
	}
}

func TestToolLog(t *testing.T) {
	calls := []ToolCall{{Summary: "Bash `go test ./...`", State: ToolDone}, {Summary: "Read `main.go`", State: ToolFailed},
		{Summary: "Grep `TODO`"}}
	want := "🔧 **Tools**\n✓ Bash `go test ./...`\n✗ Read `main.go`\n⏳ Grep `TODO`"
	if got := ToolLog(calls, 1000); got != want {
		t.Errorf("log =\n%s\nwant\n%s", got, want)
	}
	for range 20 {
		calls = append(calls, ToolCall{Summary: "Glob `*.go`"})
	}
	got := ToolLog(calls, 1000)
	if !strings.HasPrefix(got, "🔧 **Tools**\n_… 11 earlier tool calls_") || strings.Count(got, "\n") != MaxLogLines+1 {
		t.Errorf("a long log =\n%s", got)
	}
	if r := []rune(ToolLog(calls, 50)); len(r) > 51 {
		t.Errorf("the log is %d runes, over its limit", len(r))
	}
}

func TestChecklist(t *testing.T) {
	items := []TodoItem{{Text: "Read the code", Active: "Reading the code", Status: "completed"},
		{Text: "Write the fix", Active: "Writing the fix", Status: "in_progress"},
		{Text: "Run the tests", Active: "Running the tests", Status: "pending"},
		{Text: "Ship *it*", Status: "in_progress"}}
	want := "📝 **Todo**\n☑ ~Read the code~\n▶ **Writing the fix**\n☐ Run the tests\n▶ **Ship \\*it\\***"
	if got := Checklist(items, 1000); got != want {
		t.Errorf("checklist =\n%s\nwant\n%s", got, want)
	}
	if r := []rune(Checklist(items, 30)); len(r) > 31 {
		t.Errorf("the checklist is %d runes, over its limit", len(r))
	}
}

// The status message: the line alone, and verbose, the log and the list
// under it, each within half the platform's message size.
func TestProgressText(t *testing.T) {
	calls := []ToolCall{{Summary: "Bash `make`"}}
	todo := []TodoItem{{Text: "Build", Status: "pending"}}
	tests := []struct {
		name string
		p    Progress
		want string
	}{
		{"normal", Progress{Status: "Running: Bash `make`", Tools: calls, Todo: todo, MessageLimit: 4000}, "Running: Bash `make`"},
		{"verbose", Progress{Status: "Running: Bash `make`", Verbose: true, Tools: calls, Todo: todo, MessageLimit: 4000},
			"Running: Bash `make`\n\n🔧 **Tools**\n⏳ Bash `make`\n\n📝 **Todo**\n☐ Build"},
		{"verbose, nothing yet", Progress{Status: "Compacting the conversation…", Verbose: true}, "Compacting the conversation…"},
		{"normal, background", Progress{Status: "Running: Bash `make`", Background: []string{"Run the server", "b2"}},
			"Running: Bash `make`\nBackground tasks running: Run the server; b2"},
		{"background alone", Progress{Background: []string{"Run the server"}}, "Background tasks running: Run the server"},
		{"verbose, background", Progress{Status: "Running: Bash `make`", Verbose: true, Tools: calls, Background: []string{"Run the server"}},
			"Running: Bash `make`\nBackground tasks running: Run the server\n\n🔧 **Tools**\n⏳ Bash `make`"},
	}
	for _, tt := range tests {
		if got := ProgressText(tt.p); got != tt.want {
			t.Errorf("%s: ProgressText =\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
	many := make([]ToolCall, 12)
	for i := range many {
		many[i] = ToolCall{Summary: strings.Repeat("x", 100)}
	}
	got := ProgressText(Progress{Status: "s", Verbose: true, Tools: many, MessageLimit: 1000})
	if n := len([]rune(strings.TrimPrefix(got, "s\n\n"))); n > 451 {
		t.Errorf("the log is %d runes, over half the message size", n)
	}
}

func TestStreaming(t *testing.T) {
	tests := []struct{ in, want, unfinished string }{
		{"", "", ""},
		{"Hello", "Hello\n…", "Hello\n\n" + FailedText},
		{"Here:\n```go\nx := 1", "Here:\n```go\nx := 1\n```\n…", "Here:\n```go\nx := 1\n```\n\n" + FailedText},
		{"Here:\n```go\nx := 1\n```\nDone", "Here:\n```go\nx := 1\n```\nDone\n…", "Here:\n```go\nx := 1\n```\nDone\n\n" + FailedText},
		{"````md\n```\ninner", "````md\n```\ninner\n````\n…", "````md\n```\ninner\n````\n\n" + FailedText},
		{"~~~\nx", "~~~\nx\n~~~\n…", "~~~\nx\n~~~\n\n" + FailedText},
	}
	for _, tt := range tests {
		if got := Streaming(tt.in); got != tt.want {
			t.Errorf("Streaming(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := Unfinished(tt.in); got != tt.unfinished {
			t.Errorf("Unfinished(%q) = %q, want %q", tt.in, got, tt.unfinished)
		}
	}
}

func TestTurnNotices(t *testing.T) {
	tests := []struct{ got, want string }{
		{Stalled(90*time.Second+400*time.Millisecond, "running Bash `make`"),
			"⏳ No word from Claude for 1m30s; it was last running Bash `make`. It may still be working: send `!stop` to stop the turn (the session is kept)."},
		{OverTime(10 * time.Minute), "⏱ This turn ran longer than 10m0s (max_turn_time), so it was stopped. The session is kept."},
		{Running("Bash `make`"), "Running: Bash `make`"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

package local

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/platform"
)

func TestTerminalText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, plain, styled string
	}{
		{"bold and code", "Allow **Bash** to run `rm -rf x`?", "Allow Bash to run rm -rf x?",
			"Allow " + styleBold + "Bash" + styleOff + " to run " + styleCode + "rm -rf x" + styleOff + "?"},
		{"italic, not identifiers", "_(see below)_ and snake_case_name", "(see below) and snake_case_name", ""},
		{"escapes", `a \*star\* and \_under\_`, "a *star* and _under_", ""},
		{"heading and quote", "## Plan\n> quoted", "Plan\n│ quoted", ""},
		{"fenced block", "run:\n````sh\nmake `x`\n````\ndone", "run:\n    make `x`\ndone", ""},
		{"link", "see [the docs](https://x.test/a)", "see the docs (https://x.test/a)", ""},
		{"marks inside code stay", "`**not bold**`", "**not bold**", ""},
		{"ctx line dimmed", "reply\n\n[ctx: 12%]", "reply\n\n[ctx: 12%]", "reply\n\n" + styleDim + "[ctx: 12%]" + styleOff},
	}
	for _, tt := range tests {
		if got := terminalText(tt.in, false); got != tt.plain {
			t.Errorf("%s: plain = %q, want %q", tt.name, got, tt.plain)
		}
		if got := terminalText(tt.in, true); tt.styled != "" && got != tt.styled {
			t.Errorf("%s: styled = %q, want %q", tt.name, got, tt.styled)
		}
		if got := terminalText(tt.in, false); strings.Contains(got, "\x1b") {
			t.Errorf("%s: plain text has an escape code: %q", tt.name, got)
		}
	}
}

func TestStreamedLines(t *testing.T) {
	t.Parallel()
	tests := []struct{ body, whole, rest string }{
		{"", "", ""},
		{"half a li", "", "half a li"},
		{"one\ntw", "one\n", "tw"},
		{"one\ntwo\n", "one\ntwo\n", ""},
		// A code block closed only for the moment: the fence is in
		// neither part, the line before it is still being written.
		{"intro\n```go\nx := 1\ny :=\n```", "intro\n```go\nx := 1\n", "y :="},
		// A block that was closed by Claude is whole.
		{"```\nx\n```\nafter", "```\nx\n```\n", "after"},
	}
	for _, tt := range tests {
		if whole, rest := streamedLines(tt.body); whole != tt.whole || rest != tt.rest {
			t.Errorf("streamedLines(%q) = %q, %q; want %q, %q", tt.body, whole, rest, tt.whole, tt.rest)
		}
	}
}

func TestWholeWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line   string
		inCode bool
		want   string
	}{
		{"no space yet", false, "no space "},
		{"word", false, ""},
		{"a **bold claim sta", false, "a "},
		{"a **bold** claim sta", false, "a **bold** claim "},
		{"run `make te", false, "run "},
		{"inside code, never", true, ""},
		{"# a heading being", false, ""},
	}
	for _, tt := range tests {
		if got := wholeWords(tt.line, tt.inCode); got != tt.want {
			t.Errorf("wholeWords(%q, %v) = %q, want %q", tt.line, tt.inCode, got, tt.want)
		}
	}
}

// A reply streamed into a terminal prints each whole line once, then what
// is left when it is done; the status line is taken off before and drawn
// again after; piped output never gets an escape code.
func TestEditReplyStreamsLines(t *testing.T) {
	t.Parallel()
	for _, terminal := range []bool{false, true} {
		out := &syncBuffer{}
		now := time.Unix(1000, 0)
		a, err := New(Config{Name: "tty", In: strings.NewReader(""), Out: out, Terminal: terminal, Stop: "!stop",
			Now: func() time.Time { return now }}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		to := platform.Target{Platform: "tty", Channel: Channel}
		_ = a.React(ctx, to, reactWorking)
		now = now.Add(3 * time.Second)
		_ = a.ShowStatus(ctx, to, "Running: Bash `make test`")
		steps := []string{"Hel\n…", "Hello **world**\nsecond li\n…", "Hello **world**\nsecond line\nthird\n…",
			"Hello **world**\nsecond line\nthird\n\n[ctx: 3%]"}
		var msgs []platform.Target
		for _, s := range steps {
			if msgs, err = a.EditReply(ctx, to, msgs, s); err != nil || len(msgs) != 1 {
				t.Fatalf("EditReply = %v, %v", msgs, err)
			}
		}
		_ = a.React(ctx, to, reactDone)
		_ = a.Unreact(ctx, to, reactWorking)
		got := out.String()
		if !terminal {
			if got != "Hello world\nsecond line\nthird\n\n[ctx: 3%]\n\n" {
				t.Errorf("piped output = %q", got)
			}
			continue
		}
		plain := stripEscapes(got)
		for _, want := range []string{"Hello world\n", "second line\n", "third\n", "[ctx: 3%]\n", "3s · Running: Bash make test"} {
			if strings.Count(plain, want) < 1 {
				t.Errorf("terminal output lacks %q: %q", want, got)
			}
		}
		if strings.Count(plain, "Hello world") != 1 || strings.Count(plain, "second line") != 1 {
			t.Errorf("a line printed twice: %q", got)
		}
		if !strings.HasSuffix(got, "\r\x1b[K") {
			t.Errorf("the status line is not cleared at the end of the turn: %q", got)
		}
		if done, failed := a.Outcomes(); done != 1 || failed != 0 {
			t.Errorf("outcomes = %d done, %d failed", done, failed)
		}
	}
}

// A Ctrl-C while a turn runs sends the stop message once; the next one
// says to exit at once; with no turn running, it is the program's.
func TestInterrupt(t *testing.T) {
	t.Parallel()
	inR, inW := io.Pipe()
	defer inW.Close()
	a, err := New(Config{Name: "tty", In: inR, Out: &syncBuffer{}, Stop: "!stop"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{a: a, rec: newRecorder()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, h.rec) }()
	defer func() { cancel(); <-done }()
	if got := h.a.Interrupt(); got != NotWorking {
		t.Fatalf("Interrupt with no turn = %v", got)
	}
	_ = h.a.React(context.Background(), platform.Target{}, reactWorking)
	if got := h.a.Interrupt(); got != StoppingTurn {
		t.Fatalf("first Interrupt = %v", got)
	}
	if m := h.rec.next(t); m.Text != "!stop" {
		t.Errorf("the interrupt sent %q", m.Text)
	}
	if got := h.a.Interrupt(); got != StopAgain {
		t.Errorf("second Interrupt = %v", got)
	}
	_ = h.a.Unreact(context.Background(), platform.Target{}, reactWorking)
	if got := h.a.Interrupt(); got != NotWorking {
		t.Errorf("Interrupt after the turn = %v", got)
	}
}

// stripEscapes drops the escape codes (styles, line clearing) and
// carriage returns of terminal output.
func stripEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\x1b' && i+1 < len(s) && s[i+1] == '[':
			i += 2
			for i < len(s) && (s[i] < '@' || s[i] > '~') {
				i++
			}
		case s[i] == '\r':
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// The status line stays on one line of the terminal, however narrow, so
// that it can be redrawn in place.
func TestStatusLineFitsTheTerminal(t *testing.T) {
	t.Parallel()
	start := time.Unix(1000, 0)
	s := screen{working: true, started: start, doing: "Running: Bash " + strings.Repeat("x", 200)}
	for _, width := range []int{20, 40, 80, 200, 400} {
		line := s.statusLine(start.Add(75*time.Second), width)
		if n := len([]rune(line)); n >= width {
			t.Errorf("width %d: the status line has %d runes: %q", width, n, line)
		}
		if !strings.Contains(line, "1m15s · Run") {
			t.Errorf("width %d: the status line lacks the elapsed time and the status: %q", width, line)
		}
	}
	short := screen{working: true, started: start}
	if got := short.statusLine(start.Add(3*time.Second), 80); got != "⠸ 3s · Claude is working · Ctrl-C stops it" {
		t.Errorf("status line = %q", got)
	}
}

package ctxindicator

import "testing"

func TestFormat(t *testing.T) {
	for _, tt := range []struct {
		pct  int
		want string
	}{
		{62, "[ctx: 62%]"}, {0, "[ctx: 0%]"}, {100, "[ctx: 100%]"}, {140, "[ctx: 100%]"}, {-3, "[ctx: 0%]"},
	} {
		if got := Format(tt.pct); got != tt.want {
			t.Errorf("Format(%d) = %q, want %q", tt.pct, got, tt.want)
		}
	}
}

func TestAppend(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		pct   int
		ok    bool
		want  string
	}{
		{"plain", "Answer.", 62, true, "Answer.\n[ctx: 62%]"},
		{"trailing newlines tidied", "Answer.\n\n\n", 62, true, "Answer.\n[ctx: 62%]"},
		{"no token data yet", "Answer.", 0, false, "Answer."},
		{"no token data keeps whitespace", "Answer.\n\n", 0, false, "Answer.\n\n"},
		{"empty reply", "", 5, true, "[ctx: 5%]"},
		{"blank reply", " \n", 5, true, "[ctx: 5%]"},
		{"after a closed fence", "```\ncode\n```\n", 7, true, "```\ncode\n```\n[ctx: 7%]"},
		{"unclosed fence keeps its trailing spaces", "```\ncode  ", 7, true, "```\ncode  \n[ctx: 7%]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Append(tt.reply, tt.pct, tt.ok); got != tt.want {
				t.Errorf("Append(%q, %d, %v) = %q, want %q", tt.reply, tt.pct, tt.ok, got, tt.want)
			}
		})
	}
}

// The indicator the engine appends must not be mistaken for Claude's own
// report if a reply is ever parsed twice: stripping after appending gives
// back the reply and the same number.
func TestAppendThenStripRoundTrips(t *testing.T) {
	got, pct, ok := StripSelfReport(Append("Answer.", 33, true))
	if got != "Answer." || pct != 33 || !ok {
		t.Errorf("round trip = %q, %d, %v", got, pct, ok)
	}
}

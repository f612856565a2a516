package agentproc

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const classifySID = "5e55e55e-0000-4000-8000-000000000001"

func doneTurn() *transcriptBuilder {
	return newTranscript(classifySID, "/home/dev/work/p").turn("first", "out", "done")
}

func TestClassifyEnd(t *testing.T) {
	big := strings.Repeat("z", 300<<10) // past the first 64 KB window
	tests := []struct {
		name  string
		build func() *transcriptBuilder
		want  Interruption
	}{
		{"finished turn with bookkeeping after", doneTurn, InterruptionNone},
		{"empty transcript", func() *transcriptBuilder { return newTranscript(classifySID, "/p") }, InterruptionNone},
		{"bookkeeping only", func() *transcriptBuilder {
			return newTranscript(classifySID, "/p").queue("hi").apiRequest("{}").costState()
		}, InterruptionNone},
		{"prompt with no reply", func() *transcriptBuilder {
			return doneTurn().queue("second").user("second").attachment().attachment().apiRequest("{}")
		}, InterruptionPrompt},
		{"first prompt with no reply", func() *transcriptBuilder {
			return newTranscript(classifySID, "/p").queue("hi").user("hi")
		}, InterruptionPrompt},
		{"tool call without its result", func() *transcriptBuilder {
			return doneTurn().user("second").text("Let me look.", "tool_use").toolUse("toolu_1", "ls", "tool_use")
		}, InterruptionTurn},
		{"tool call line with a null stop", func() *transcriptBuilder {
			return doneTurn().user("second").toolUse("toolu_1", "ls", "")
		}, InterruptionTurn},
		{"text before a tool call that was never written", func() *transcriptBuilder {
			return doneTurn().user("second").text("Let me look.", "tool_use")
		}, InterruptionTurn},
		{"tool result without the reply", func() *transcriptBuilder {
			return doneTurn().user("second").toolUse("toolu_1", "ls", "tool_use").toolResult("toolu_1", "a\nb").apiRequest("{}")
		}, InterruptionTurn},
		{"reply without a final stop", func() *transcriptBuilder {
			return doneTurn().user("second").text("half an ans", "")
		}, InterruptionTurn},
		{"paused turn", func() *transcriptBuilder {
			return doneTurn().user("second").text("searching", "pause_turn")
		}, InterruptionTurn},
		{"reply stopped at max tokens", func() *transcriptBuilder {
			return doneTurn().user("second").text("long", "max_tokens")
		}, InterruptionNone},
		{"interrupted on purpose", func() *transcriptBuilder {
			return doneTurn().user("second").text("partial", "").user("[Request interrupted by user]")
		}, InterruptionNone},
		{"tool denied with interrupt", func() *transcriptBuilder {
			return doneTurn().user("rm it").toolUse("toolu_1", "rm -rf x", "tool_use").
				toolResult("toolu_1", "The user doesn't want to proceed with this tool use.").
				user("[Request interrupted by user for tool use]")
		}, InterruptionNone},
		{"API error", func() *transcriptBuilder {
			return doneTurn().user("huge").apiError("Prompt is too long").lastPrompt("huge")
		}, InterruptionNone},
		{"after compaction", func() *transcriptBuilder {
			b := doneTurn().user("<command-name>/compact</command-name>")
			b.line(`{"parentUuid":null,"logicalParentUuid":"x","isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","compactMetadata":{"trigger":"manual","preTokens":4012}}`)
			b.userContent("", `"This session is being continued from a previous conversation that ran out of context."`, `"isCompactSummary":true`)
			return b.user("<local-command-stdout>Compacted </local-command-stdout>")
		}, InterruptionNone},
		{"meta user line last", func() *transcriptBuilder {
			return doneTurn().meta("Caveat: local command output follows.")
		}, InterruptionNone},
		{"sidechain lines do not count", func() *transcriptBuilder {
			b := doneTurn().user("second")
			return b.line(`{"parentUuid":"x","isSidechain":true,"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"sub"}],"stop_reason":"end_turn"},"uuid":"s1"}`)
		}, InterruptionPrompt},
		{"system line after the reply", func() *transcriptBuilder {
			return doneTurn().line(`{"parentUuid":"x","type":"system","subtype":"turn_duration","durationMs":1200}`)
		}, InterruptionNone},
		{"half-written last line is ignored", func() *transcriptBuilder {
			return doneTurn().user("second").raw(`{"parentUuid":"a","isSidechain":false,"type":"assistant","message":{"id":"msg_x","type":"message","role":"assistant","content":[{"type":"text","text":"hal`)
		}, InterruptionPrompt},
		{"huge tool result last (window grows)", func() *transcriptBuilder {
			return doneTurn().user("cat it").toolUse("toolu_1", "cat big", "tool_use").toolResult("toolu_1", big)
		}, InterruptionTurn},
		{"prompt followed by much bookkeeping (window grows)", func() *transcriptBuilder {
			b := doneTurn().user("second")
			for i := 0; i < 5; i++ {
				b.apiRequest(strings.Repeat("b", 100<<10))
			}
			return b
		}, InterruptionPrompt},
		{"prompt as blocks", func() *transcriptBuilder {
			return doneTurn().userContent("", `[{"type":"text","text":"see"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]`, "")
		}, InterruptionPrompt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.build().writeTo(t, t.TempDir())
			got, err := ClassifyEnd(p)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ClassifyEnd = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestClassifyEndMissing(t *testing.T) {
	_, err := ClassifyEnd(filepath.Join(t.TempDir(), "none.jsonl"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want fs.ErrNotExist", err)
	}
}

func TestContainsUUID(t *testing.T) {
	const ours = "11111111-2222-4333-8444-555555555555"
	const other = "99999999-2222-4333-8444-555555555555"
	tests := []struct {
		name  string
		build func() *transcriptBuilder
		uuid  string
		want  bool
	}{
		{"our message near the end", func() *transcriptBuilder {
			return doneTurn().queue("hello uuid").userUUID("hello uuid", ours).attachment().text("hi", "end_turn").lastPrompt("hello uuid")
		}, ours, true},
		{"absent", doneTurn, ours, false},
		{"only as parentUuid and leafUuid", func() *transcriptBuilder {
			b := doneTurn()
			b.parent = ours
			return b.text("x", "end_turn").lastPrompt("x")
		}, ours, false},
		{"an assistant line with that uuid", func() *transcriptBuilder {
			return doneTurn().assistant(`[{"type":"text","text":"x"}]`, "end_turn", `"uuid":"`+ours+`"`)
		}, ours, false},
		{"quoted inside a prompt", func() *transcriptBuilder {
			return doneTurn().user(`{"uuid":"` + ours + `"}`)
		}, ours, false},
		{"far back, behind megabytes of turns", func() *transcriptBuilder {
			b := doneTurn().userUUID("early", ours).text("ok", "end_turn")
			for b.buf.Len() < 3<<20 {
				b.turn("later", strings.Repeat("o", 4000), "done")
			}
			return b
		}, ours, true},
		{"another id is not a match", func() *transcriptBuilder {
			return doneTurn().userUUID("x", other)
		}, ours, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.build().writeTo(t, t.TempDir())
			got, err := ContainsUUID(p, tt.uuid)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ContainsUUID = %v, want %v", got, tt.want)
			}
		})
	}
}

// A match that straddles two backward read steps: the boundary at the
// pattern's first byte, inside it, and at its last byte and just past it;
// at the first step boundary and at a later one.
func TestContainsUUIDAcrossSteps(t *testing.T) {
	const ours = "11111111-2222-4333-8444-555555555555"
	pat := `"uuid":"` + ours + `"`
	line := newTranscript(classifySID, "/p").userUUID("hello", ours).bytes()
	at := strings.Index(string(line), pat)
	dir := t.TempDir()
	// Boundaries sit at size-64K, size-(64K+128K), … from the end.
	for _, fromEnd := range []int{containsFirstStep, containsFirstStep + 2*containsFirstStep} {
		for _, shift := range []int{0, 1, len(`"uuid":"`), len(pat) - 1, len(pat)} {
			// Pad after the line so that the boundary falls shift bytes
			// into the pattern.
			b := newTranscript(classifySID, "/p")
			b.buf.Write(line)
			pad := fromEnd - (len(line) - at - shift)
			b.line(`{"type":"api-request-blob","blob":"` + strings.Repeat("f", pad-len(`{"type":"api-request-blob","blob":""}`)-1) + `"}`)
			p := filepath.Join(dir, "t.jsonl")
			if err := os.WriteFile(p, b.bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			if boundary := b.buf.Len() - fromEnd; boundary != at+shift {
				t.Fatalf("setup: boundary at %d, pattern at %d+%d", boundary, at, shift)
			}
			got, err := ContainsUUID(p, ours)
			if err != nil || !got {
				t.Errorf("boundary %d from the end, shift %d: ContainsUUID = %v, %v; want true", fromEnd, shift, got, err)
			}
		}
	}
}

func TestContainsUUIDErrors(t *testing.T) {
	p := doneTurn().writeTo(t, t.TempDir())
	for _, id := range []string{"", `a"b`, `a\b`} {
		if _, err := ContainsUUID(p, id); err == nil {
			t.Errorf("ContainsUUID(%q) gave no error", id)
		}
	}
	if _, err := ContainsUUID(filepath.Join(t.TempDir(), "none.jsonl"), "x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want fs.ErrNotExist", err)
	}
}

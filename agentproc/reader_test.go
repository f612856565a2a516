package agentproc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// decodeFixture decodes every line of a fixture with one decoder, as the
// reader does for one process.
func decodeFixture(t *testing.T, name string) []decoded {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var dec decoder
	var out []decoded
	lr := newLineReader(f, MaxLineBytes)
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, dec.decodeLine(line))
	}
}

func eventsOf(ds []decoded) []Event {
	var evs []Event
	for _, d := range ds {
		evs = append(evs, d.events...)
	}
	return evs
}

func all[T Event](evs []Event) []T {
	var out []T
	for _, ev := range evs {
		if e, ok := ev.(T); ok {
			out = append(out, e)
		}
	}
	return out
}

func one[T Event](t *testing.T, evs []Event) T {
	t.Helper()
	got := all[T](evs)
	if len(got) != 1 {
		var zero T
		t.Fatalf("got %d events of type %T, want 1", len(got), zero)
	}
	return got[0]
}

func TestDecodeFullFixtures(t *testing.T) {
	tests := []struct {
		fixture string
		check   func(t *testing.T, ds []decoded, evs []Event)
	}{
		{"full/turn_hi.jsonl", func(t *testing.T, _ []decoded, evs []Event) {
			init := one[Init](t, evs)
			if init.SessionID == "" || init.Model != "claude-opus-5-5" || init.Version != "2.1.328" ||
				init.PermissionMode != "default" || !strings.HasSuffix(init.Cwd, "/work/fixture") || len(init.Tools) == 0 {
				t.Errorf("init = %+v", init)
			}
			a := one[AssistantText](t, evs)
			if a.Text != "echo: hi" || a.Synthetic || a.MessageID == "" || a.Usage.ContextTokens() != 4007 {
				t.Errorf("assistant = %+v", a)
			}
			r := one[*Result](t, evs)
			if r.Text != "echo: hi" || r.IsError || r.Subtype != "success" || r.TerminalReason != "completed" ||
				r.StopReason != "end_turn" || r.SessionID != init.SessionID || r.NumTurns != 1 || r.TotalCostUSD <= 0 {
				t.Errorf("result = %+v", r)
			}
			if r.ContextTokens != 4007 || r.Model != "claude-opus-5-5" || r.ContextWindow() != 1000000 {
				t.Errorf("context %d model %q window %d", r.ContextTokens, r.Model, r.ContextWindow())
			}
			if resultError(r) != nil {
				t.Errorf("resultError = %v", resultError(r))
			}
		}},
		{"full/multi.jsonl", func(t *testing.T, _ []decoded, evs []Event) {
			rs := all[*Result](evs)
			if len(rs) != 3 || len(all[Init](evs)) != 3 {
				t.Fatalf("%d results, %d inits; want 3 each", len(rs), len(all[Init](evs)))
			}
			for i, r := range rs {
				if i > 0 && r.TotalCostUSD <= rs[i-1].TotalCostUSD {
					t.Errorf("result %d cost %v not cumulative", i, r.TotalCostUSD)
				}
				if want := int64(4007 + 100*i); r.ContextTokens != want {
					t.Errorf("result %d ContextTokens %d, want %d", i, r.ContextTokens, want)
				}
			}
		}},
		{"full/tool_auto.jsonl", func(t *testing.T, _ []decoded, evs []Event) {
			tu := one[ToolUse](t, evs)
			if tu.Name != "Bash" || tu.ID == "" || !strings.Contains(string(tu.Input), `"echo hi"`) {
				t.Errorf("tool use = %+v", tu)
			}
			tr := one[ToolResult](t, evs)
			if tr.ToolUseID != tu.ID || tr.Content != "hi" || tr.IsError {
				t.Errorf("tool result = %+v", tr)
			}
			if n := len(all[AssistantText](evs)); n != 2 {
				t.Errorf("%d assistant texts, want 2", n)
			}
			// Two API calls: result.usage sums them, the context is the
			// last call's (PROTOCOL.md §9).
			r := one[*Result](t, evs)
			if r.ContextTokens != 7+1500+2600 {
				t.Errorf("ContextTokens = %d, want the last call's %d", r.ContextTokens, 7+1500+2600)
			}
			if r.Usage.ContextTokens() != 14+3000+5100 || r.Usage.ContextTokens() == r.ContextTokens {
				t.Errorf("result usage = %+v", r.Usage)
			}
		}},
		{"full/midtool.jsonl", func(t *testing.T, _ []decoded, evs []Event) {
			// 2.1.332: a message sent while the tool ran is folded into
			// the turn; stdout shows nothing of it, and one result covers
			// both inputs.
			tu := one[ToolUse](t, evs)
			if tr := one[ToolResult](t, evs); tr.ToolUseID != tu.ID || tr.Content != "opened" {
				t.Errorf("tool result = %+v", tr)
			}
			if r := one[*Result](t, evs); r.IsError || r.Text != "tool said: opened" || r.NumTurns != 2 {
				t.Errorf("result = %+v, want the one result of the folded turn", r)
			}
			if init := one[Init](t, evs); init.Version != "2.1.332" {
				t.Errorf("init version %q", init.Version)
			}
		}},
		{"full/perm_allow.jsonl", func(t *testing.T, ds []decoded, evs []Event) {
			pr := one[PermissionRequest](t, evs)
			tu := one[ToolUse](t, evs)
			if pr.RequestID == "" || pr.ToolName != "Bash" || pr.DisplayName != "Bash" || pr.ToolUseID != tu.ID ||
				!strings.HasSuffix(pr.BlockedPath, "/allowed.txt") || len(pr.Suggestions) != 3 ||
				!strings.Contains(string(pr.Input), "touch allowed.txt") {
				t.Errorf("permission request = %+v", pr)
			}
			var perms int
			for _, d := range ds {
				if d.perm != nil {
					perms++
					if d.perm.RequestID != pr.RequestID {
						t.Errorf("perm side channel id %q", d.perm.RequestID)
					}
				}
			}
			if perms != 1 {
				t.Errorf("%d perm side channels", perms)
			}
			// updatedPermissions for "always": the addRules suggestion only.
			rules := alwaysAllowRules(pr.Suggestions)
			if len(rules) != 1 || !strings.Contains(string(rules[0]), `"addRules"`) {
				t.Errorf("always-allow rules = %s", rules)
			}
			if r := one[*Result](t, evs); r.IsError || len(r.PermissionDenials) != 0 {
				t.Errorf("result = %+v", r)
			}
		}},
		{"full/perm_deny.jsonl", func(t *testing.T, _ []decoded, evs []Event) {
			tr := one[ToolResult](t, evs)
			if !tr.IsError || tr.Content != "User said no via chat" {
				t.Errorf("tool result = %+v", tr)
			}
			r := one[*Result](t, evs)
			if r.IsError || len(r.PermissionDenials) != 1 || r.PermissionDenials[0] != "Bash" {
				t.Errorf("result = %+v", r)
			}
		}},
		{"full/perm_deny_interrupt.jsonl", func(t *testing.T, _ []decoded, evs []Event) {
			r := one[*Result](t, evs)
			if !r.IsError || r.Subtype != "error_during_execution" || r.TerminalReason != "aborted_tools" ||
				r.Text != "" || len(r.Errors) == 0 {
				t.Errorf("result = %+v", r)
			}
			if resultError(r) != nil {
				t.Errorf("an aborted turn is no sentinel error: %v", resultError(r))
			}
		}},
		{"full/perm_cancel.jsonl", func(t *testing.T, ds []decoded, evs []Event) {
			pr := one[PermissionRequest](t, evs)
			pc := one[PermissionCancel](t, evs)
			if pc.RequestID != pr.RequestID {
				t.Errorf("cancel %q for request %q", pc.RequestID, pr.RequestID)
			}
			var reply *decoded
			for i := range ds {
				if ds[i].replyID == "int_1" {
					reply = &ds[i]
				}
				if ds[i].cancelID != "" && ds[i].cancelID != pr.RequestID {
					t.Errorf("cancel side channel id %q", ds[i].cancelID)
				}
			}
			if reply == nil || !reply.reply.ok || !strings.Contains(string(reply.reply.response), "still_queued") {
				t.Errorf("interrupt reply = %+v", reply)
			}
			if r := one[*Result](t, evs); r.TerminalReason != "aborted_tools" {
				t.Errorf("result = %+v", r)
			}
		}},
		{"full/interrupt_slow.jsonl", func(t *testing.T, _ []decoded, evs []Event) {
			rs := all[*Result](evs)
			if len(rs) != 2 {
				t.Fatalf("%d results", len(rs))
			}
			// No "result" key in an aborted turn's result.
			if r := rs[0]; !r.IsError || r.Subtype != "error_during_execution" || r.TerminalReason != "aborted_streaming" || r.Text != "" {
				t.Errorf("aborted result = %+v", r)
			}
			if rs[0].ContextTokens != 4007 {
				t.Errorf("aborted turn ContextTokens = %d (the partial reply was one call)", rs[0].ContextTokens)
			}
			if r := rs[1]; r.Text != "echo: after interrupt" || r.ContextTokens != 4107 {
				t.Errorf("next result = %+v", r)
			}
		}},
		{"full/toolong.jsonl", func(t *testing.T, _ []decoded, evs []Event) {
			texts := all[AssistantText](evs)
			if len(texts) != 2 || !texts[0].Synthetic || !texts[1].Synthetic || texts[0].Model != "<synthetic>" {
				t.Errorf("assistant texts = %+v", texts)
			}
			rs := all[*Result](evs)
			if len(rs) != 2 {
				t.Fatalf("%d results", len(rs))
			}
			for i, r := range rs {
				if !errors.Is(resultError(r), ErrPromptTooLong) || r.Subtype != "success" || r.APIErrorStatus != 400 {
					t.Errorf("result %d = %+v", i, r)
				}
				if r.ContextTokens != 0 || r.Model != "" {
					t.Errorf("result %d context %d model %q: synthetic messages are no API call", i, r.ContextTokens, r.Model)
				}
			}
			comps := all[Compaction](evs)
			if len(comps) != 2 || !comps[0].Active || comps[1].Active || comps[1].Result != "failed" || comps[1].Error == "" {
				t.Errorf("compaction events = %+v", comps)
			}
		}},
		{"full/control.jsonl", func(t *testing.T, ds []decoded, evs []Event) {
			replies := map[string]controlReply{}
			for _, d := range ds {
				if d.replyID != "" {
					replies[d.replyID] = d.reply
				}
			}
			if r := replies["req_bogus"]; r.ok || r.err != "Unsupported control request subtype: bogus_thing" {
				t.Errorf("bogus reply = %+v", r)
			}
			if r := replies["req_spm"]; !r.ok || !strings.Contains(string(r.response), "acceptEdits") {
				t.Errorf("set_permission_mode reply = %+v", r)
			}
			if r := replies["req_model"]; !r.ok {
				t.Errorf("set_model reply = %+v", r)
			}
			r := one[*Result](t, evs)
			if r.Model != "claude-sonnet-4-5" || r.ContextWindow() != 200000 {
				t.Errorf("model %q window %d", r.Model, r.ContextWindow())
			}
		}},
		{"full/resume_unknown.jsonl", func(t *testing.T, _ []decoded, evs []Event) {
			r := one[*Result](t, evs)
			if !errors.Is(resultError(r), ErrSessionNotFound) || r.Text != "" || r.ContextTokens != 0 {
				t.Errorf("result = %+v, error %v", r, resultError(r))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			ds := decodeFixture(t, tt.fixture)
			evs := eventsOf(ds)
			if ms := all[Malformed](evs); len(ms) > 0 {
				t.Fatalf("complete fixture gave Malformed events: %+v", ms)
			}
			tt.check(t, ds, evs)
		})
	}
}

// TestDecodeSharedCaptures runs the shared captures, whose long lines were
// cut at 700 chars: complete lines decode, cut ones come out as Malformed
// and reading goes on.
func TestDecodeSharedCaptures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "captures", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captures: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var dec decoder
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(nil, 1<<20)
			for n := 1; sc.Scan(); n++ {
				line := sc.Bytes()
				d := dec.decodeLine(line)
				var malformed int
				for _, ev := range d.events {
					if _, ok := ev.(Malformed); ok {
						malformed++
					}
				}
				switch {
				case json.Valid(line) && malformed > 0:
					t.Errorf("line %d is valid JSON but decoded as Malformed", n)
				case !json.Valid(line) && (malformed != 1 || len(d.events) != 1):
					t.Errorf("cut line %d gave %d events (%d Malformed), want one Malformed", n, len(d.events), malformed)
				}
			}
		})
	}
}

// TestDecodeP0Usage checks the tool turn of the shared capture p0: its
// complete assistant lines carry the per-call usage.
func TestDecodeP0Usage(t *testing.T) {
	evs := eventsOf(decodeFixture(t, "captures/p0.stdout.jsonl"))
	texts := all[AssistantText](evs)
	if len(texts) != 2 || texts[1].Text != "tool said: hi" || texts[1].Usage.ContextTokens() != 4007 {
		t.Errorf("assistant texts = %+v", texts)
	}
	if tu := one[ToolUse](t, evs); tu.ID != "toolu_fake000024" {
		t.Errorf("tool use = %+v", tu)
	}
	if tr := one[ToolResult](t, evs); tr.Content != "hi" || tr.ToolUseID != "toolu_fake000024" {
		t.Errorf("tool result = %+v", tr)
	}
}

func TestDecodeLine(t *testing.T) {
	tests := []struct {
		name  string
		line  string
		check func(t *testing.T, d decoded)
	}{
		{"blank", "   ", func(t *testing.T, d decoded) {
			if len(d.events) != 0 {
				t.Errorf("events = %v", d.events)
			}
		}},
		{"not json", "Warning: something {", func(t *testing.T, d decoded) {
			m := d.events[0].(Malformed)
			if m.Line != "Warning: something {" || m.Err == nil || errors.Is(m.Err, ErrMalformedOutput) {
				t.Errorf("malformed = %+v", m)
			}
		}},
		{"unknown type", `{"type":"telemetry","x":1}`, func(t *testing.T, d decoded) {
			if len(d.events) != 0 || d.replyID != "" || d.unsupported != "" {
				t.Errorf("decoded = %+v", d)
			}
		}},
		{"unknown system subtype", `{"type":"system","subtype":"session_state_changed"}`, func(t *testing.T, d decoded) {
			if len(d.events) != 0 {
				t.Errorf("events = %v", d.events)
			}
		}},
		{"result with type last", `{"result":"ok","is_error":false,"subtype":"success","session_id":"s","type":"result"}`, func(t *testing.T, d decoded) {
			r := d.events[0].(*Result)
			if r.Text != "ok" || r.SessionID != "s" {
				t.Errorf("result = %+v", r)
			}
		}},
		{"result field of the wrong type", `{"type":"result","num_turns":"two","result":"x"}`, func(t *testing.T, d decoded) {
			m := d.events[0].(Malformed)
			if !errors.Is(m.Err, ErrMalformedOutput) {
				t.Errorf("malformed err = %v", m.Err)
			}
		}},
		{"other line with a field of the wrong type", `{"type":"system","subtype":"init","session_id":"s","tools":"all"}`, func(t *testing.T, d decoded) {
			if init, ok := d.events[0].(Init); !ok || init.SessionID != "s" {
				t.Errorf("events = %+v", d.events)
			}
		}},
		{"too long by text prefix", `{"type":"result","is_error":true,"result":"Prompt is too long · x","subtype":"success"}`, func(t *testing.T, d decoded) {
			if err := resultError(d.events[0].(*Result)); !errors.Is(err, ErrPromptTooLong) {
				t.Errorf("resultError = %v", err)
			}
		}},
		{"api error is not too long", `{"type":"result","is_error":true,"result":"API Error: 529 Overloaded","terminal_reason":"api_error"}`, func(t *testing.T, d decoded) {
			if err := resultError(d.events[0].(*Result)); err != nil {
				t.Errorf("resultError = %v", err)
			}
		}},
		{"user string content", `{"type":"user","message":{"role":"user","content":"plain"}}`, func(t *testing.T, d decoded) {
			if len(d.events) != 0 {
				t.Errorf("events = %v", d.events)
			}
		}},
		{"tool result with block content", `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"b"}]}]}}`, func(t *testing.T, d decoded) {
			tr := d.events[0].(ToolResult)
			if tr.Content != "a\nb" || tr.ToolUseID != "t1" {
				t.Errorf("tool result = %+v", tr)
			}
		}},
		{"thinking block ignored", `{"type":"assistant","message":{"id":"m","model":"x","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"hi"}]}}`, func(t *testing.T, d decoded) {
			if len(d.events) != 1 || d.events[0].(AssistantText).Text != "hi" {
				t.Errorf("events = %+v", d.events)
			}
		}},
		{"inbound control request of another subtype", `{"type":"control_request","request_id":"r9","request":{"subtype":"hook_callback"}}`, func(t *testing.T, d decoded) {
			if d.unsupported != "r9" || d.unsupportedType != "hook_callback" || len(d.events) != 0 {
				t.Errorf("decoded = %+v", d)
			}
		}},
		{"control error reply", `{"type":"control_response","response":{"subtype":"error","request_id":"q","error":"nope"}}`, func(t *testing.T, d decoded) {
			if d.replyID != "q" || d.reply.ok || d.reply.err != "nope" {
				t.Errorf("decoded = %+v", d)
			}
		}},
		{"api retry", `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":2,"retry_delay_ms":500,"error_status":529,"error":"overloaded"}`, func(t *testing.T, d decoded) {
			if r := d.events[0].(APIRetry); r != (APIRetry{Attempt: 1, MaxRetries: 2, RetryDelayMs: 500, ErrorStatus: 529, Error: "overloaded"}) {
				t.Errorf("retry = %+v", r)
			}
		}},
		{"compact boundary", `{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"manual","pre_tokens":4012,"post_tokens":2608}}`, func(t *testing.T, d decoded) {
			if cb := d.events[0].(CompactBoundary); cb != (CompactBoundary{Trigger: "manual", PreTokens: 4012, PostTokens: 2608}) {
				t.Errorf("boundary = %+v", cb)
			}
		}},
		{"status without compaction", `{"type":"system","subtype":"status","status":"requesting"}`, func(t *testing.T, d decoded) {
			if len(d.events) != 0 {
				t.Errorf("events = %+v", d.events)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dec decoder
			tt.check(t, dec.decodeLine([]byte(tt.line)))
		})
	}
}

func TestLineReader(t *testing.T) {
	big := strings.Repeat("y", 200<<10) // past bufio's 64 KiB buffer
	tests := []struct {
		name  string
		input string
		max   int
		want  []string // "!" stands for errLineTooLong
	}{
		{"simple", "a\nb\n", 10, []string{"a", "b"}},
		{"last line unterminated", "a\nb", 10, []string{"a", "b"}},
		{"empty lines kept", "\n\na\n", 10, []string{"", "", "a"}},
		{"at the limit", "0123456789\n", 10, []string{"0123456789"}},
		{"over the limit, then on", "0123456789X\nok\n", 10, []string{"!", "ok"}},
		{"over the limit unterminated", "0123456789X", 10, []string{"!"}},
		{"longer than the buffer", big + "\nz\n", len(big), []string{big, "z"}},
		{"longer than the buffer and the limit", big + "\nz\n", 100 << 10, []string{"!", "z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readLines(t, newLineReader(strings.NewReader(tt.input), tt.max))
			if len(got) != len(tt.want) {
				t.Fatalf("got %d lines, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("line %d = %.20q…, want %.20q…", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestTailBuffer(t *testing.T) {
	tb := &tailBuffer{max: 8}
	for _, s := range []string{"hello ", "world, ", "this is the end"} {
		_, _ = tb.Write([]byte(s))
	}
	if got := tb.String(); got != " the end" {
		t.Errorf("tail = %q, want the last 8 bytes", got)
	}
}

// relayLine is an assistant event of about 1 KB, shaped as the CLI writes it.
func relayLine() []byte {
	text := strings.Repeat("word ", 120)
	line := `{"type":"assistant","message":{"content":[{"text":"` + text + `","type":"text"}],"id":"msg_` +
		strings.Repeat("0", 6) + `","model":"claude-opus-5-5","role":"assistant","stop_reason":null,"stop_sequence":null,` +
		`"type":"message","usage":{"cache_creation_input_tokens":1500,"cache_read_input_tokens":2500,"input_tokens":7,"output_tokens":1},` +
		`"context_management":null},"parent_tool_use_id":null,"session_id":"f19453d4-a3af-4ad0-b18d-6c99aec3f823",` +
		`"uuid":"11af93ec-b7b2-4326-9629-1d12e34fd00d","timestamp":"2026-11-30T11:02:56.942Z","request_id":"req_fake000024"}`

	return []byte(line + "\n")
}

// BenchmarkRelay measures the whole stdout path of one process (line
// splitting, decoding, control routing, channel send) for ~1 KB assistant
// lines; the events/s metric is the relay throughput on one core.
func BenchmarkRelay(b *testing.B) {
	line := relayLine()
	data := bytes.Repeat(line, 1000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var events int
	cpu0 := cpuTime()
	for b.Loop() {
		p := &Process{
			log:    slog.New(slog.DiscardHandler),
			events: make(chan Event, eventBuffer),
		}
		p.controls = newControls(p.writeJSON, p.done, p.log, p.SessionID, &p.wg)
		done := make(chan int)
		go func() {
			n := 0
			for range p.events {
				n++
			}
			done <- n
		}()
		p.readLoop(bytes.NewReader(data))
		close(p.events)
		events += <-done
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	// On a shared machine wall time swings with the neighbours' load; the
	// process's CPU time (all goroutines, GC included) is the steadier cost.
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(events)/cpu.Seconds(), "events/cpu-s")
	}
}

// cpuTime is the user+system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDecodeLine is the decoder alone, per line kind.
func BenchmarkDecodeLine(b *testing.B) {
	fixtures := map[string]string{"assistant": "full/turn_hi.jsonl", "result": "full/turn_hi.jsonl", "init": "full/turn_hi.jsonl"}
	lines := map[string][]byte{}
	for kind, file := range fixtures {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range bytes.Split(data, []byte("\n")) {
			var head struct{ Type, Subtype string }
			if json.Unmarshal(l, &head) == nil && (head.Type == kind || head.Subtype == kind) {
				lines[kind] = l
			}
		}
	}
	for _, kind := range []string{"init", "assistant", "result"} {
		line := lines[kind]
		if line == nil {
			b.Fatalf("no %s line in the fixture", kind)
		}
		b.Run(kind, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			var dec decoder
			for b.Loop() {
				dec.decodeLine(line)
			}
		})
	}
}

// readLines reads lr to the end; a line over the limit reads as "!".
func readLines(t *testing.T, lr *lineReader) []string {
	t.Helper()
	var got []string
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			return got
		}
		if errors.Is(err, errLineTooLong) {
			got = append(got, "!")
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(line))
	}
}

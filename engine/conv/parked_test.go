package conv

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
)

type answersTaken struct {
	got map[string]agentproc.PermissionDecision
}

func (a *answersTaken) RespondPermission(_ context.Context, id string, d agentproc.PermissionDecision) error {
	a.got[id] = d
	return nil
}

// TestPresetAnswer: a request the resumed CLI makes again (same tool, the
// same input as JSON, whatever its spacing or key order) is answered with
// the answer given while no process ran, once; any other request is left
// to be asked.
func TestPresetAnswer(t *testing.T) {
	allow := agentproc.PermissionDecision{Behavior: agentproc.Allow}
	preset := func() []parkedRequest {
		return []parkedRequest{{Req: agentproc.PermissionRequest{ToolName: "Bash", Input: json.RawMessage(`{"command":"touch x","description":"Make x"}`)}, Answer: &allow}}
	}
	tests := []struct {
		name  string
		tool  string
		input string
		taken bool
	}{
		{"the same request", "Bash", `{"command":"touch x","description":"Make x"}`, true},
		{"keys in another order, other spacing", "Bash", `{ "description": "Make x", "command": "touch x" }`, true},
		{"another command", "Bash", `{"command":"rm x","description":"Make x"}`, false},
		{"another tool", "Write", `{"command":"touch x","description":"Make x"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := &permissions{log: slog.New(slog.DiscardHandler), preset: preset()}
			a := &answersTaken{got: map[string]agentproc.PermissionDecision{}}
			req := agentproc.PermissionRequest{RequestID: "r2", ToolName: tt.tool, Input: json.RawMessage(tt.input)}
			if got := ps.presetAnswer(a, req); got != tt.taken {
				t.Fatalf("presetAnswer = %v, want %v", got, tt.taken)
			}
			if tt.taken && (a.got["r2"].Behavior != agentproc.Allow || len(ps.preset) != 0) {
				t.Errorf("answered %+v, preset left %d: want allowed, and the answer used up", a.got, len(ps.preset))
			}
			if tt.taken && ps.presetAnswer(a, req) {
				t.Errorf("the same answer was used twice")
			}
		})
	}
}

// TestParkedRoundTrip: the record's form of the requests reads back as
// written, and a field that does not parse reads as nothing parked.
func TestParkedRoundTrip(t *testing.T) {
	d := agentproc.PermissionDecision{Behavior: agentproc.Deny, Message: "no"}
	in := []parkedRequest{{Item: "C1:1", Req: agentproc.PermissionRequest{RequestID: "r1", ToolName: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}, Answer: &d, Outcome: "denied: no"}}
	out := decodeParked(encodeParked(in))
	if len(out) != 1 || out[0].Item != "C1:1" || out[0].Req.RequestID != "r1" || out[0].Answer == nil || out[0].Answer.Message != "no" {
		t.Errorf("read back %+v", out)
	}
	if got := decodeParked("not json"); got != nil {
		t.Errorf("garbage read as %+v", got)
	}
	if encodeParked(nil) != "" {
		t.Errorf("nothing parked is not the empty string")
	}
}

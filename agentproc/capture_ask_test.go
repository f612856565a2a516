package agentproc_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
)

// The capture tier (see capture_helper_test.go) for AskUserQuestion: the
// model's question reaches the host as a can_use_tool request, and the host
// answers by allowing it with the answers added to the input.

// askQuestions is a two-question ask: one single choice, one pick-any.
const askQuestions = `[{"question":"Which database?","header":"DB","options":[{"label":"Postgres","description":"SQL server"},` +
	`{"label":"SQLite","description":"One file"}],"multiSelect":false},` +
	`{"question":"Which features?","header":"Features","options":[{"label":"Auth","description":"Login"},` +
	`{"label":"Search","description":"Full text"},{"label":"Export","description":"CSV files"}],"multiSelect":true}]`

func TestRealCLICaptureAskUserQuestion(t *testing.T) {
	t.Parallel()
	var qs []any
	if err := json.Unmarshal([]byte(askQuestions), &qs); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		prompt string
		answer func(req map[string]any) map[string]any
		// what the model gets back in the tool_result
		want    string
		isError bool
	}{
		{"one_question", "[[ASK]]",
			allowWith(map[string]any{"answers": map[string]any{"Which color should the button be?": "Blue"}}),
			`Your questions have been answered: "Which color should the button be?"="Blue". You can now continue with these answers in mind.`, false},
		// A pick-any answer may be a list of labels; the CLI joins it
		// with "," (no space).
		{"multi_select_list", "[[ASK:" + askQuestions + "]]",
			allowWith(map[string]any{"answers": map[string]any{"Which database?": "Postgres", "Which features?": []string{"Auth", "Export"}}}),
			`Your questions have been answered: "Which database?"="Postgres", "Which features?"="Auth,Export". You can now continue with these answers in mind.`, false},
		// Any text that is not exactly a label (the "Other" answer, or
		// labels joined with ", ") switches the CLI to a warier wording.
		{"other_free_text", "[[ASK:" + askQuestions + "]]",
			allowWith(map[string]any{"answers": map[string]any{"Which database?": "MariaDB, please", "Which features?": "Auth, Export"}}),
			`The user answered: "Which database?"="MariaDB, please", "Which features?"="Auth, Export". Read the answers carefully`, false},
		{"notes", "[[ASK]]",
			allowWith(map[string]any{"answers": map[string]any{"Which color should the button be?": "Red"},
				"annotations": map[string]any{"Which color should the button be?": map[string]any{"notes": "a dark red"}}}),
			`"Which color should the button be?"="Red" notes: a dark red.`, false},
		{"no_answers", "[[ASK]]", nil, "The user did not answer the questions.", false},
		// updatedInput replaces the whole input: without the questions
		// it fails the tool's schema and the model gets the error.
		{"answers_without_questions", "[[ASK]]",
			func(map[string]any) map[string]any {
				return map[string]any{"behavior": "allow", "updatedInput": map[string]any{
					"answers": map[string]any{"Which color should the button be?": "Blue"}}}
			},
			"The required parameter `questions` is missing", true},
		{"deny", "[[ASK]]",
			func(map[string]any) map[string]any {
				return map[string]any{"behavior": "deny", "message": "The user dismissed the question in the chat."}
			},
			"The user dismissed the question in the chat.", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := fakeapi.Start(t)
			c := startCapture(t, api, captureOpts{})
			var asked map[string]any
			res := c.turn(tt.prompt, nil, func(req map[string]any) map[string]any {
				asked = req
				if tt.answer == nil {
					return map[string]any{"behavior": "allow", "updatedInput": dig(req, "request", "input")}
				}
				return tt.answer(req)
			})
			if asked == nil {
				t.Fatal("no can_use_tool request for AskUserQuestion")
			}
			r := asked["request"].(map[string]any)
			if r["tool_name"] != "AskUserQuestion" || r["requires_user_interaction"] != true || r["permission_suggestions"] != nil {
				t.Errorf("request %v: want tool_name AskUserQuestion, requires_user_interaction, no suggestions", r)
			}
			q0, _ := dig(r, "input", "questions").([]any)
			if len(q0) == 0 {
				t.Fatalf("input %v carries no questions", r["input"])
			}
			first := q0[0].(map[string]any)
			opts, _ := first["options"].([]any)
			if first["question"] == "" || first["header"] == "" || len(opts) < 2 || first["multiSelect"] == nil ||
				opts[0].(map[string]any)["label"] == "" || opts[0].(map[string]any)["description"] == "" {
				t.Errorf("question %v: want question, header, multiSelect and options with label and description", first)
			}
			tr := lastToolResult(t, api)
			if !strings.Contains(tr.Content, tt.want) || tr.IsError != tt.isError {
				t.Errorf("the model got %q (error %v), want %q (error %v)", tr.Content, tr.IsError, tt.want, tt.isError)
			}
			if res["is_error"] != false || str(res, "terminal_reason") != "completed" {
				t.Errorf("result %v %v, want a completed turn", res["is_error"], res["terminal_reason"])
			}
			c.finish()
			c.save("ask_"+tt.name, "Fake API marker: `"+tt.prompt+"` (AskUserQuestion). The host answers the can_use_tool\n"+
				"request on stdin; the tool_result the model got follows in stdout.")
		})
	}
}

// TestRealCLICaptureAskInterrupt leaves a question unanswered and interrupts: the
// CLI withdraws the request (control_cancel_request) and ends the turn.
func TestRealCLICaptureAskInterrupt(t *testing.T) {
	t.Parallel()
	api := fakeapi.Start(t)
	c := startCapture(t, api, captureOpts{})
	c.user("[[ASK]]")
	req := c.permission()
	c.control("int_1", map[string]any{"subtype": "interrupt"})
	cancel := c.nextType("control_cancel_request")
	if cancel["request_id"] != req["request_id"] {
		t.Errorf("cancelled %v, want the pending question %v", cancel["request_id"], req["request_id"])
	}
	res := c.result()
	if str(res, "terminal_reason") != "aborted_tools" || str(res, "subtype") != "error_during_execution" {
		t.Errorf("result %v %v, want error_during_execution aborted_tools", res["subtype"], res["terminal_reason"])
	}
	// The next prompt shows the model the question as rejected.
	c.turn("what now", nil, nil)
	tr := api.Requests()[1].ToolResults
	if len(tr) != 1 || !tr[0].IsError || !strings.Contains(tr[0].Content, "doesn't want to proceed") {
		t.Errorf("the model saw %+v, want the rejected question", tr)
	}
	c.finish()
	c.save("ask_interrupt", "Fake API marker: `[[ASK]]`, left unanswered; the host sends an interrupt control request.\n"+
		"The CLI sends control_cancel_request for the pending can_use_tool, then ends the turn (aborted_tools).\n"+
		"Left unanswered for 5.5 minutes, the CLI wrote nothing and waited (checked by hand, not in this fixture).")
}

package conv

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/platform"
)

// twoQuestions is an AskUserQuestion input as the CLI sends it
// (agentproc/testdata/captures/ask_multi_select_list), with a field of its
// own that must be echoed back.
const twoQuestions = `{"questions":[
 {"question":"Which database?","header":"DB","options":[{"label":"Postgres","description":"relational"},{"label":"SQLite","description":"a file"}],"multiSelect":false},
 {"question":"Which features?","header":"Features","options":[{"label":"Auth","description":"login"},{"label":"Export","description":"CSV"},{"label":"Search","description":"full text"}],"multiSelect":true}],
 "metadata":{"source":"x"}}`

func mustQuestions(t *testing.T, input string) *questionSet {
	t.Helper()
	qs, err := newQuestionSet(json.RawMessage(input))
	if err != nil {
		t.Fatal(err)
	}
	return qs
}

func TestQuestionSetRefusesWhatItCannotShow(t *testing.T) {
	for _, in := range []string{`not json`, `{}`, `{"questions":[]}`, `{"questions":[{"question":"","options":[]}]}`,
		`{"questions":[{"question":"a"},{"question":"b"},{"question":"c"},{"question":"d"},{"question":"e"}]}`,
		`{"questions":[{"question":"many","options":[` + strings.Repeat(`{"label":"x"},`, 10) + `{"label":"y"}]}]}`} {
		if _, err := newQuestionSet(json.RawMessage(in)); err == nil {
			t.Errorf("%s: accepted", in)
		}
	}
}

// The answers go back as the CLI reads them: the input echoed whole with
// "answers" keyed by each question's text, a multi-select question's
// labels as a list, free text as typed.
func TestQuestionAnswers(t *testing.T) {
	tests := []struct {
		name    string
		act     func(qs *questionSet)
		want    map[string]any // answers
		done    bool
		shownBy string
	}{
		{"buttons", func(qs *questionSet) {
			qs.press(platform.ChoiceAnswer, 0, platform.Options(1), "ann")
			qs.press(platform.ChoiceToggle, 1, platform.Options(0), "bob")
			qs.press(platform.ChoiceToggle, 1, platform.Options(2), "bob")
			qs.press(platform.ChoiceToggle, 1, platform.Options(0), "bob") // off again
			qs.press(platform.ChoiceSubmit, 1, 0, "bob")
		}, map[string]any{"Which database?": "SQLite", "Which features?": []any{"Search"}}, true, "ann, bob"},
		{"a menu's selection, then submit", func(qs *questionSet) {
			qs.press(platform.ChoiceSelect, 1, platform.Options(0, 1), "ann")
			qs.press(platform.ChoiceSubmit, 1, 0, "ann")
		}, map[string]any{"Which features?": []any{"Auth", "Export"}}, false, "ann"},
		{"a menu's answer at once", func(qs *questionSet) {
			qs.press(platform.ChoiceAnswer, 1, platform.Options(0, 2), "ann")
		}, map[string]any{"Which features?": []any{"Auth", "Search"}}, false, "ann"},
		{"presses that mean nothing", func(qs *questionSet) {
			qs.press(platform.ChoiceAnswer, 0, platform.Options(0, 1), "ann") // two of a single-select
			qs.press(platform.ChoiceAnswer, 0, platform.Options(7), "ann")    // no such option
			qs.press(platform.ChoiceAnswer, 5, platform.Options(0), "ann")    // no such question
			qs.press(platform.ChoiceSubmit, 1, 0, "ann")                      // nothing chosen
		}, map[string]any{}, false, ""},
		{"one reply line per question", func(qs *questionSet) {
			qs.reply("2\n1, 3", "cat")
		}, map[string]any{"Which database?": "SQLite", "Which features?": []any{"Auth", "Search"}}, true, "cat"},
		{"free text answers the first open question", func(qs *questionSet) {
			qs.reply("MariaDB, please", "cat")
		}, map[string]any{"Which database?": "MariaDB, please"}, false, "cat"},
		{"numbers out of range are free text", func(qs *questionSet) {
			qs.reply("3", "cat")
		}, map[string]any{"Which database?": "3"}, false, "cat"},
		{"an answered question keeps its answer", func(qs *questionSet) {
			qs.press(platform.ChoiceAnswer, 0, platform.Options(0), "ann")
			qs.press(platform.ChoiceAnswer, 0, platform.Options(1), "bob")
			qs.reply("everything", "cat")
		}, map[string]any{"Which database?": "Postgres", "Which features?": "everything"}, true, "ann, cat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qs := mustQuestions(t, twoQuestions)
			tt.act(qs)
			raw, err := qs.updatedInput()
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Questions []any          `json:"questions"`
				Metadata  map[string]any `json:"metadata"`
				Answers   map[string]any `json:"answers"`
			}
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Questions) != 2 || got.Metadata["source"] != "x" {
				t.Errorf("the input was not echoed whole: %s", raw)
			}
			if !reflect.DeepEqual(got.Answers, tt.want) {
				t.Errorf("answers = %v, want %v", got.Answers, tt.want)
			}
			if qs.complete() != tt.done || qs.answeredBy() != tt.shownBy {
				t.Errorf("complete %t, answered by %q", qs.complete(), qs.answeredBy())
			}
		})
	}
}

// The set's view is what render shows: the questions as Claude asked them
// and each answer with who gave it, as it is given.
func TestQuestionView(t *testing.T) {
	qs := mustQuestions(t, twoQuestions)
	v := qs.view()
	if len(v) != 2 || v[0].Header != "DB" || v[0].Text != "Which database?" || len(v[1].Options) != 3 ||
		v[1].Options[2] != (render.Option{Label: "Search", Description: "full text"}) || !v[1].MultiSelect || v[0].Answer.Done {
		t.Fatalf("view = %+v", v)
	}
	qs.press(platform.ChoiceToggle, 1, platform.Options(0), "bob")
	qs.press(platform.ChoiceAnswer, 0, platform.Options(1), "ann")
	v = qs.view()
	if a := v[0].Answer; !a.Done || !reflect.DeepEqual(a.Labels, []string{"SQLite"}) || a.By != "ann" {
		t.Errorf("answer = %+v", a)
	}
	if v[1].Selected != platform.Options(0) || v[1].Answer.Done {
		t.Errorf("the toggled question = %+v", v[1])
	}
	qs.reply("everything", "cat")
	if a := qs.view()[1].Answer; !a.Done || a.Free != "everything" || a.By != "cat" {
		t.Errorf("free answer = %+v", a)
	}
}

// A plan is the request's text, or its file's when the request has none.
func TestPlanOf(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plan.md")
	if err := os.WriteFile(file, []byte("# From the file\n1. Do it."), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, input, want string
	}{
		{"the request's plan, whole", `{"plan":"# Plan\n\n1. Add the flag.\n2. Test it.","planFilePath":"` + file + `"}`, "# Plan\n\n1. Add the flag.\n2. Test it."},
		{"no plan text: the file", `{"planFilePath":"` + file + `"}`, "# From the file\n1. Do it."},
		{"nothing at all", `{}`, ""},
		{"a missing file", `{"planFilePath":"` + filepath.Join(dir, "gone.md") + `"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := planOf(json.RawMessage(tt.input)); got != tt.want {
				t.Errorf("planOf = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestToolLog(t *testing.T) {
	var l toolLog
	l.start("t1", "Bash `go test ./...`")
	l.start("t2", "Read `main.go`")
	l.start("t3", "Grep `TODO`")
	l.end("t1", false)
	l.end("t2", true)
	if l.end("nope", false) {
		t.Error("an unknown call was ended")
	}
	want := []render.ToolCall{{Summary: "Bash `go test ./...`", State: render.ToolDone},
		{Summary: "Read `main.go`", State: render.ToolFailed}, {Summary: "Grep `TODO`", State: render.ToolRunning}}
	if !reflect.DeepEqual(l.calls, want) {
		t.Errorf("calls = %+v, want %+v", l.calls, want)
	}
}

func TestChecklist(t *testing.T) {
	var c checklist
	// TodoWrite's input, as captured (captures/todowrite).
	if !c.fromTodoWrite(json.RawMessage(`{"todos":[{"content":"Read the code","status":"completed","activeForm":"Reading the code"},{"content":"Write the fix","status":"in_progress","activeForm":"Writing the fix"},{"content":"Run the tests","status":"pending","activeForm":"Running the tests"}]}`)) {
		t.Fatal("TodoWrite not read")
	}
	want := []render.TodoItem{{Text: "Read the code", Active: "Reading the code", Status: "completed"},
		{Text: "Write the fix", Active: "Writing the fix", Status: "in_progress"}, {Text: "Run the tests", Active: "Running the tests", Status: "pending"}}
	if got := c.shown(); !reflect.DeepEqual(got, want) {
		t.Errorf("checklist = %+v, want %+v", got, want)
	}
	// The task tools' results, as captured (captures/task_tools).
	var tasks checklist
	steps := []struct {
		result string
		want   string // each item as text:status
	}{
		{`{"task":{"id":"1","subject":"Read","description":"d"}}`, "Read:pending"},
		{`{"task":{"id":"2","subject":"Fix","description":"d"}}`, "Read:pending Fix:pending"},
		{`{"success":true,"taskId":"1","updatedFields":["status"],"statusChange":{"from":"pending","to":"in_progress"}}`, "Read:in_progress Fix:pending"},
		{`{"success":true,"taskId":"1","updatedFields":["status"],"statusChange":{"from":"in_progress","to":"completed"}}`, "Read:completed Fix:pending"},
		{`{"success":true,"taskId":"2","updatedFields":["status"],"statusChange":{"from":"pending","to":"deleted"}}`, "Read:completed"},
		{`{"tasks":[{"id":"1","subject":"Read","status":"completed","blockedBy":[]},{"id":"3","subject":"Ship","status":"pending","blockedBy":[]}]}`, "Read:completed Ship:pending"},
	}
	for i, s := range steps {
		if !tasks.fromTaskResult(json.RawMessage(s.result)) {
			t.Fatalf("step %d: result not applied", i+1)
		}
		var got []string
		for _, it := range tasks.shown() {
			got = append(got, it.Text+":"+it.Status)
		}
		if strings.Join(got, " ") != s.want {
			t.Errorf("step %d: checklist %q, want %q", i+1, got, s.want)
		}
	}
	if tasks.fromTaskResult(json.RawMessage(`{"success":true,"taskId":"9","statusChange":{"to":"completed"}}`)) || tasks.fromTaskResult(nil) {
		t.Error("a result for no known task changed the list")
	}
}

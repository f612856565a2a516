package conv

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

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

// What the chat shows: every question with its header, options and
// descriptions; Claude's words cannot format or hide anything; an answer
// names who gave it.
func TestQuestionTexts(t *testing.T) {
	qs := mustQuestions(t, `{"questions":[{"question":"Pick *one* `+"`x`"+`\u202e","header":"H_1","options":[{"label":"A","description":"first"},{"label":"B","description":"second"}],"multiSelect":false}]}`)
	list := qs.list()
	for _, want := range []string{"**H\\_1**: Pick \\*one\\* 'x'⟨U+202E⟩", "1. A — first", "2. B — second", "Reply with an option's number"} {
		if !strings.Contains(list, want) {
			t.Errorf("list lacks %q:\n%s", want, list)
		}
	}
	p := qs.prompt("req-1", "")
	if p.RequestID != "req-1" || len(p.Questions) != 1 || len(p.Questions[0].Options) != 2 || p.Questions[0].Done || p.Questions[0].MultiSelect {
		t.Fatalf("prompt = %+v", p)
	}
	qs.press(platform.ChoiceAnswer, 0, platform.Options(1), "ann_b")
	if p := qs.prompt("req-1", "Answered by ann_b."); !p.Questions[0].Done || !strings.Contains(p.Questions[0].Text, "✅ B (ann\\_b)") || p.Outcome == "" {
		t.Errorf("answered prompt = %+v", p)
	}
}

func TestPlanText(t *testing.T) {
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
		{"nothing at all", `{}`, "did not say what it is"},
		{"a missing file", `{"planFilePath":"` + filepath.Join(dir, "gone.md") + `"}`, "did not say what it is"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := planText(json.RawMessage(tt.input)); !strings.Contains(got, tt.want) {
				t.Errorf("planText = %q, want it to hold %q", got, tt.want)
			}
		})
	}
	if cs := planChoices(false); len(cs) != 2 || cs[0].Choice != platform.ChoicePlanDefault || cs[1].Choice != platform.ChoicePlanKeep {
		t.Errorf("choices without acceptEdits = %+v", cs)
	}
	if cs := planChoices(true); len(cs) != 3 || cs[1].Choice != platform.ChoicePlanAcceptEdits {
		t.Errorf("choices with acceptEdits = %+v", cs)
	}
}

func TestToolLog(t *testing.T) {
	var l toolLog
	l.start("t1", "Bash", json.RawMessage(`{"command":"go test ./..."}`))
	l.start("t2", "Read", json.RawMessage(`{"file_path":"main.go"}`))
	l.start("t3", "Grep", json.RawMessage(`{"pattern":"TODO"}`))
	l.end("t1", false)
	l.end("t2", true)
	if l.end("nope", false) {
		t.Error("an unknown call was ended")
	}
	want := "🔧 **Tools**\n✓ Bash `go test ./...`\n✗ Read `main.go`\n⏳ Grep `TODO`"
	if got := l.text(1000); got != want {
		t.Errorf("log =\n%s\nwant\n%s", got, want)
	}
	for i := range 20 {
		l.start(string(rune('a'+i)), "Glob", json.RawMessage(`{"pattern":"*.go"}`))
	}
	got := l.text(1000)
	if !strings.HasPrefix(got, "🔧 **Tools**\n_… 11 earlier tool calls_") || strings.Count(got, "\n") != maxLogLines+1 {
		t.Errorf("a long log =\n%s", got)
	}
	if r := []rune(l.text(50)); len(r) > 51 {
		t.Errorf("the log is %d runes, over its limit", len(r))
	}
}

func TestChecklist(t *testing.T) {
	var c checklist
	// TodoWrite's input, as captured (captures/todowrite).
	if !c.fromTodoWrite(json.RawMessage(`{"todos":[{"content":"Read the code","status":"completed","activeForm":"Reading the code"},{"content":"Write the fix","status":"in_progress","activeForm":"Writing the fix"},{"content":"Run the tests","status":"pending","activeForm":"Running the tests"}]}`)) {
		t.Fatal("TodoWrite not read")
	}
	if got, want := c.text(1000), "📝 **Todo**\n☑ ~Read the code~\n▶ **Writing the fix**\n☐ Run the tests"; got != want {
		t.Errorf("checklist =\n%s\nwant\n%s", got, want)
	}
	// The task tools' results, as captured (captures/task_tools).
	var tasks checklist
	steps := []struct {
		result string
		want   string
	}{
		{`{"task":{"id":"1","subject":"Read","description":"d"}}`, "☐ Read"},
		{`{"task":{"id":"2","subject":"Fix","description":"d"}}`, "☐ Read\n☐ Fix"},
		{`{"success":true,"taskId":"1","updatedFields":["status"],"statusChange":{"from":"pending","to":"in_progress"}}`, "▶ **Read**\n☐ Fix"},
		{`{"success":true,"taskId":"1","updatedFields":["status"],"statusChange":{"from":"in_progress","to":"completed"}}`, "☑ ~Read~\n☐ Fix"},
		{`{"success":true,"taskId":"2","updatedFields":["status"],"statusChange":{"from":"pending","to":"deleted"}}`, "☑ ~Read~"},
		{`{"tasks":[{"id":"1","subject":"Read","status":"completed","blockedBy":[]},{"id":"3","subject":"Ship","status":"pending","blockedBy":[]}]}`, "☑ ~Read~\n☐ Ship"},
	}
	for i, s := range steps {
		if !tasks.fromTaskResult(json.RawMessage(s.result)) {
			t.Fatalf("step %d: result not applied", i+1)
		}
		if got := strings.TrimPrefix(tasks.text(1000), "📝 **Todo**\n"); got != s.want {
			t.Errorf("step %d: checklist\n%s\nwant\n%s", i+1, got, s.want)
		}
	}
	if tasks.fromTaskResult(json.RawMessage(`{"success":true,"taskId":"9","statusChange":{"to":"completed"}}`)) || tasks.fromTaskResult(nil) {
		t.Error("a result for no known task changed the list")
	}
}

func TestStreamingText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"Hello", "Hello\n…"},
		{"Here:\n```go\nx := 1", "Here:\n```go\nx := 1\n```\n…"},
		{"Here:\n```go\nx := 1\n```\nDone", "Here:\n```go\nx := 1\n```\nDone\n…"},
		{"````md\n```\ninner", "````md\n```\ninner\n````\n…"},
		{"~~~\nx", "~~~\nx\n~~~\n…"},
	}
	for _, tt := range tests {
		if got := streamingText(tt.in); got != tt.want {
			t.Errorf("streamingText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

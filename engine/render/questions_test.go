package render

import (
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/platform"
)

// What the chat shows: every question with its header, options and
// descriptions; Claude's words cannot format or hide anything; an answer
// names who gave it.
func TestQuestionTexts(t *testing.T) {
	one := []Question{{Header: "H_1", Text: "Pick *one* `x`\u202e",
		Options: []Option{{Label: "A", Description: "first"}, {Label: "B", Description: "second"}}}}
	two := []Question{
		{Header: "DB", Text: "Which database?", Options: []Option{{Label: "Postgres"}, {Label: "SQLite"}}},
		{Text: "Which features?", MultiSelect: true, Options: []Option{{Label: "Auth"}, {Label: "Export"}},
			Answer: Answer{Done: true, Labels: []string{"Auth", "Export"}, By: "ann_b"}},
		{Text: "Anything else?", Answer: Answer{Done: true, Free: "no *thanks*", By: "cat"}},
	}
	tests := []struct {
		name      string
		text      string
		has, lack []string
	}{
		{"a list of one", QuestionList(one),
			[]string{"❓ **Claude asks:**", "**H\\_1**: Pick \\*one\\* 'x'⟨U+202E⟩", "\n1. A — first", "\n2. B — second",
				"Reply with an option's number", "`!skip` dismisses the question."},
			[]string{"**1)**", "• "}},
		{"a list of several", QuestionList(two),
			[]string{"**1)** **DB**: Which database?", "**2)** Which features? _(choose any)_", "✅ Auth, Export (ann\\_b)",
				"✅ “no \\*thanks\\*” (cat)", "Reply with one line per question", "`!skip` dismisses the questions."},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, want := range tt.has {
				if !strings.Contains(tt.text, want) {
					t.Errorf("text lacks %q:\n%s", want, tt.text)
				}
			}
			for _, no := range tt.lack {
				if strings.Contains(tt.text, no) {
					t.Errorf("text holds %q:\n%s", no, tt.text)
				}
			}
		})
	}

	p := QuestionPrompt("req-1", "", one)
	if p.RequestID != "req-1" || p.Outcome != "" || len(p.Questions) != 1 || len(p.Questions[0].Options) != 2 ||
		p.Questions[0].Done || p.Questions[0].MultiSelect || !strings.Contains(p.Questions[0].Text, "• A — first") {
		t.Fatalf("prompt = %+v", p)
	}
	two[0].Selected = platform.Options(1)
	p = QuestionPrompt("req-2", "Answered by ann_b.", two)
	if p.Outcome != "Answered by ann_b." || p.Questions[0].Selected != platform.Options(1) || p.Questions[0].Done ||
		!p.Questions[1].Done || !p.Questions[1].MultiSelect || !strings.Contains(p.Questions[1].Text, "✅ Auth, Export (ann\\_b)") {
		t.Errorf("answered prompt = %+v", p)
	}
	if got := QuestionName("Which\u202e database?"); got != "Claude's question “Which⟨U+202E⟩ database?”" {
		t.Errorf("QuestionName = %q", got)
	}
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name, plan, want string
	}{
		{"the plan, whole", "  # Plan\n\n1. Add the flag.\n2. Test it.\n", "📋 **Claude's plan** — approve it to start, or keep planning with your feedback (reply in the thread):\n\n# Plan\n\n1. Add the flag.\n2. Test it."},
		{"what hides is named", "rm\u200b -rf", "\n\nrm⟨U+200B⟩ -rf"},
		{"no plan", " \n", "📋 **Claude has a plan** but did not say what it is."},
	}
	for _, tt := range tests {
		if got := Plan(tt.plan); !strings.Contains(got, tt.want) {
			t.Errorf("%s: Plan = %q, want it to hold %q", tt.name, got, tt.want)
		}
	}
	if cs := PlanChoices(false); len(cs) != 2 || cs[0].Choice != platform.ChoicePlanDefault || cs[1].Choice != platform.ChoicePlanKeep {
		t.Errorf("choices without acceptEdits = %+v", cs)
	}
	if cs := PlanChoices(true); len(cs) != 3 || cs[1].Choice != platform.ChoicePlanAcceptEdits {
		t.Errorf("choices with acceptEdits = %+v", cs)
	}
	if h := PlanHint(false); !strings.Contains(h, "`!allow` to approve") || strings.Contains(h, "!allow edits") {
		t.Errorf("hint without acceptEdits = %q", h)
	}
	if h := PlanHint(true); !strings.Contains(h, "`!allow edits`") {
		t.Errorf("hint with acceptEdits = %q", h)
	}
}

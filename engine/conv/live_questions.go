package conv

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/platform"
)

// Claude's questions (AskUserQuestion) being answered in the chat, and
// their answers as the CLI takes them back: the tool's input with
// "answers" added, keyed by each question's text (docs/claude-code.md §1).
// Pure: the session goroutine keeps one questionSet per pending request;
// render shows it (view).

// askInput is the part of AskUserQuestion's input that is shown; the
// input itself is echoed back whole.
type askInput struct {
	Questions []askQuestion `json:"questions"`
}

type askQuestion struct {
	Question    string      `json:"question"`
	Header      string      `json:"header"`
	Options     []askOption `json:"options"`
	MultiSelect bool        `json:"multiSelect"`
}

type askOption struct {
	Label       string `json:"label"`
	Description string `json:"description"`
}

// Bounds of what a chat shows of one question set: the CLI's schema asks
// 1 to 4 questions of 2 to 4 options; a button can name 10 of each.
const (
	maxQuestions       = 4
	maxQuestionOptions = 10
)

// questionAnswer is how one question was answered.
type questionAnswer struct {
	done   bool
	labels []string // the options chosen, in order
	free   string   // a free-text answer ("Other")
	by     string   // who answered
}

// questionSet is one AskUserQuestion request being answered in the chat.
type questionSet struct {
	input    map[string]json.RawMessage // the request's input, echoed
	qs       []askQuestion
	selected []platform.OptionSet // a multi-select question's toggles so far
	answers  []questionAnswer
}

// errNotQuestions means the input cannot be shown as questions: the
// request is then treated as any other permission request.
var errNotQuestions = errors.New("not a question the chat can show")

// newQuestionSet reads an AskUserQuestion input.
func newQuestionSet(input json.RawMessage) (*questionSet, error) {
	var raw map[string]json.RawMessage
	var in askInput
	if err := json.Unmarshal(input, &raw); err != nil {
		return nil, fmt.Errorf("%w: %v", errNotQuestions, err)
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, fmt.Errorf("%w: %v", errNotQuestions, err)
	}
	if len(in.Questions) == 0 || len(in.Questions) > maxQuestions {
		return nil, fmt.Errorf("%w: %d questions", errNotQuestions, len(in.Questions))
	}
	for i, q := range in.Questions {
		if strings.TrimSpace(q.Question) == "" || len(q.Options) > maxQuestionOptions {
			return nil, fmt.Errorf("%w: question %d has no text or %d options", errNotQuestions, i+1, len(q.Options))
		}
	}
	return &questionSet{input: raw, qs: in.Questions, selected: make([]platform.OptionSet, len(in.Questions)),
		answers: make([]questionAnswer, len(in.Questions))}, nil
}

// view is the set as render shows it: the questions with their answers
// so far.
func (qs *questionSet) view() []render.Question {
	out := make([]render.Question, len(qs.qs))
	for i, q := range qs.qs {
		opts := make([]render.Option, len(q.Options))
		for oi, o := range q.Options {
			opts[oi] = render.Option{Label: o.Label, Description: o.Description}
		}
		a := qs.answers[i]
		out[i] = render.Question{Header: q.Header, Text: q.Question, Options: opts, MultiSelect: q.MultiSelect,
			Selected: qs.selected[i], Answer: render.Answer{Done: a.done, Labels: a.labels, Free: a.free, By: a.by}}
	}
	return out
}

// open lists the questions not answered yet.
func (qs *questionSet) open() []int {
	var out []int
	for i, a := range qs.answers {
		if !a.done {
			out = append(out, i)
		}
	}
	return out
}

// complete reports whether every question is answered.
func (qs *questionSet) complete() bool { return len(qs.open()) == 0 }

// press applies a button press by user; it reports whether it changed
// anything.
func (qs *questionSet) press(c platform.Choice, q int, opts platform.OptionSet, user string) bool {
	if q < 0 || q >= len(qs.qs) || qs.answers[q].done {
		return false
	}
	n := len(qs.qs[q].Options)
	valid := func(s platform.OptionSet) platform.OptionSet {
		var out platform.OptionSet
		for _, i := range s.List() {
			if i < n {
				out = out.With(i)
			}
		}
		return out
	}
	switch c {
	case platform.ChoiceAnswer:
		opts = valid(opts)
		if opts == 0 || (!qs.qs[q].MultiSelect && len(opts.List()) != 1) {
			return false
		}
		qs.answerWith(q, opts, user)
	case platform.ChoiceSelect:
		qs.selected[q] = valid(opts)
	case platform.ChoiceToggle:
		for _, i := range valid(opts).List() {
			qs.selected[q] = qs.selected[q].Toggle(i)
		}
	case platform.ChoiceSubmit:
		if qs.selected[q] == 0 {
			return false
		}
		qs.answerWith(q, qs.selected[q], user)
	default:
		return false
	}
	return true
}

func (qs *questionSet) answerWith(q int, opts platform.OptionSet, user string) {
	var labels []string
	for _, i := range opts.List() {
		labels = append(labels, qs.qs[q].Options[i].Label)
	}
	qs.selected[q] = opts
	qs.answers[q] = questionAnswer{done: true, labels: labels, by: user}
}

// reply applies a reply in the thread by user to the open questions: one
// line per open question when there are several lines, else the first open
// one. A line of option numbers ("2", "1,3") picks them; anything else is a
// free-text answer. It reports whether the reply answered something.
func (qs *questionSet) reply(text, user string) bool {
	open := qs.open()
	text = strings.TrimSpace(text)
	if len(open) == 0 || text == "" {
		return false
	}
	lines := []string{text}
	if ls := nonEmptyLines(text); len(ls) == len(open) && len(open) > 1 {
		lines = ls
	}
	for i, line := range lines {
		q := open[i]
		if opts, ok := qs.numbers(q, line); ok {
			qs.answerWith(q, opts, user)
			continue
		}
		qs.answers[q] = questionAnswer{done: true, free: line, by: user}
	}
	return true
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// numbers reads "2" or "1, 3" as options of question q (1-based); ok is
// false when the line is not that, or names an option q does not have, or
// several of a single-select question.
func (qs *questionSet) numbers(q int, line string) (platform.OptionSet, bool) {
	var opts platform.OptionSet
	fields := strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' })
	for _, f := range fields {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > len(qs.qs[q].Options) {
			return 0, false
		}
		opts = opts.With(n - 1)
	}
	if opts == 0 || (!qs.qs[q].MultiSelect && len(opts.List()) > 1) {
		return 0, false
	}
	return opts, true
}

// updatedInput is the answer for the CLI: the input as received with
// "answers" added, question text → the label chosen, the labels of a
// multi-select question as a list (the CLI joins them), or the free text.
func (qs *questionSet) updatedInput() (json.RawMessage, error) {
	answers := map[string]any{}
	for i, q := range qs.qs {
		a := qs.answers[i]
		switch {
		case !a.done:
		case a.free != "":
			answers[q.Question] = a.free
		case q.MultiSelect:
			answers[q.Question] = a.labels
		case len(a.labels) == 1:
			answers[q.Question] = a.labels[0]
		}
	}
	out := make(map[string]any, len(qs.input)+1)
	for k, v := range qs.input {
		out[k] = v
	}
	out["answers"] = answers
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encoding the answers: %w", err)
	}
	return b, nil
}

// answeredBy names who answered, for the prompt's outcome.
func (qs *questionSet) answeredBy() string {
	var names []string
	for _, a := range qs.answers {
		if a.done && a.by != "" && !containsString(names, a.by) {
			names = append(names, a.by)
		}
	}
	return strings.Join(names, ", ")
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// summary is the answers as one line for the activity feed: each
// question, then what was chosen or typed.
func (qs *questionSet) summary() string {
	var parts []string
	for i, q := range qs.qs {
		a := qs.answers[i]
		switch {
		case !a.done:
		case a.free != "":
			parts = append(parts, q.Question+" → "+a.free)
		default:
			parts = append(parts, q.Question+" → "+strings.Join(a.labels, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

package render

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cc-connect/cc-connect/platform"
)

// Claude's questions (AskUserQuestion) as the chat shows them: with
// buttons where the platform has them (QuestionPrompt), else as a numbered
// list answered by a reply (QuestionList). Claude's words are made visible
// and bounded, and cannot format or hide anything.

// Bounds of what a chat shows of one question: its text and each option.
const (
	questionTextLimit = 1000
	OptionTextLimit   = 300
)

// Question is one of Claude's questions and how far it is answered.
type Question struct {
	Header, Text string
	Options      []Option
	MultiSelect  bool
	// Selected are a multi-select question's toggles so far.
	Selected platform.OptionSet
	Answer   Answer
}

// Option is one answer Claude offers.
type Option struct {
	Label, Description string
}

// Answer is how a question was answered.
type Answer struct {
	Done   bool
	Labels []string // the options chosen, in order
	Free   string   // a free-text answer ("Other")
	By     string   // who answered
}

// questionText is one question as shown: its header, the question, the
// options with their descriptions, and its answer once given.
func questionText(q Question, numbered bool) string {
	var b strings.Builder
	if h := strings.TrimSpace(q.Header); h != "" {
		b.WriteString("**" + escapeMD(chatText(h, 60)) + "**: ")
	}
	b.WriteString(escapeMD(chatText(q.Text, questionTextLimit)))
	if q.MultiSelect {
		b.WriteString(" _(choose any)_")
	}
	for oi, o := range q.Options {
		b.WriteString("\n")
		if numbered {
			b.WriteString(strconv.Itoa(oi+1) + ". ")
		} else {
			b.WriteString("• ")
		}
		b.WriteString(escapeMD(chatText(o.Label, OptionTextLimit)))
		if d := strings.TrimSpace(o.Description); d != "" {
			b.WriteString(" — " + escapeMD(chatText(d, OptionTextLimit)))
		}
	}
	if a := q.Answer; a.Done {
		b.WriteString("\n✅ " + escapeMD(answerText(a)) + " (" + escapeMD(chatText(a.By, 80)) + ")")
	}
	return b.String()
}

// answerText is an answer as shown.
func answerText(a Answer) string {
	if a.Free != "" {
		return "“" + chatText(a.Free, OptionTextLimit) + "”"
	}
	labels := make([]string, len(a.Labels))
	for j, l := range a.Labels {
		labels[j] = chatText(l, OptionTextLimit)
	}
	return strings.Join(labels, ", ")
}

// QuestionPrompt is a question set as a platform.QuestionAsker shows it;
// outcome, once set, says how it ended.
func QuestionPrompt(requestID, outcome string, qs []Question) platform.QuestionPrompt {
	p := platform.QuestionPrompt{RequestID: requestID, Outcome: outcome,
		Intro: "❓ **Claude asks** — press an option, or reply in the thread with your own answer:"}
	for _, q := range qs {
		opts := make([]platform.QuestionOption, len(q.Options))
		for oi, o := range q.Options {
			opts[oi] = platform.QuestionOption{Label: chatText(o.Label, OptionTextLimit)}
		}
		p.Questions = append(p.Questions, platform.Question{Text: questionText(q, false), Options: opts,
			MultiSelect: q.MultiSelect, Selected: q.Selected, Done: q.Answer.Done})
	}
	return p
}

// QuestionList is a question set as text, for a chat without buttons:
// numbered options, answered by a reply.
func QuestionList(qs []Question) string {
	var b strings.Builder
	b.WriteString("❓ **Claude asks:**")
	for i, q := range qs {
		b.WriteString("\n\n")
		if len(qs) > 1 {
			b.WriteString(fmt.Sprintf("**%d)** ", i+1))
		}
		b.WriteString(questionText(q, true))
	}
	b.WriteString("\n\n")
	switch {
	case len(qs) > 1:
		b.WriteString("Reply with one line per question: an option's number (several, like `1,3`, where you may choose any), or your own answer. `!skip` dismisses the questions.")
	default:
		b.WriteString("Reply with an option's number (several, like `1,3`, where you may choose any), or with your own answer. `!skip` dismisses the question.")
	}
	return b.String()
}

// QuestionName names a pending question set by its first question, for
// the restart notice.
func QuestionName(first string) string {
	return "Claude's question “" + chatText(first, 80) + "”"
}

// QuestionOutcome is how a question set posted as a list ended.
func QuestionOutcome(outcome string) string { return "Claude's question: " + lowerFirst(outcome) }

// What the chat is told as a question set is answered.
const (
	NoQuestion         = "No question of Claude's is pending."
	QuestionNotAllowed = "That is Claude's question: press an option, reply in the thread with your answer, or `!skip` it."
	AnswersNotPassed   = "The answers could not be passed on."
	// NotWaiting answers a reply that came when nothing waited for one.
	NotWaiting = "Nothing was waiting for a reply any more, so that message did not reach Claude; send it again once the turn has ended."
)

// AnsweredBy is the outcome of a question set every question of which
// is answered; who names those who answered.
func AnsweredBy(who string) string { return "Answered by " + who + "." }

// DismissedBy is the outcome of a question set dismissed with !skip.
func DismissedBy(who string) string { return "Dismissed by " + who + "." }

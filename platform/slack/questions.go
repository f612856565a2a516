package slack

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/slack-go/slack"

	"github.com/cc-connect/cc-connect/platform"
)

// A question prompt is one message: the intro, then each question's text
// with, while it is open, an actions block of its own, then a Dismiss
// button. Each actions block's block_id names the question and the
// request ("ccq|<question>|<request id>"; "ccq|x|<request id>" for
// Dismiss), so that a press of a select menu, which carries no value of
// ours, still says what it answers; action ids say what was pressed.
const (
	questionBlockPrefix = "ccq|"
	actionQuestionPick  = "ccq_a_" // + option index: a single-select option
	actionQuestionMenu  = "ccq_sel"
	actionQuestionDone  = "ccq_sub"
	actionQuestionDrop  = "ccq_x"
	maxBlockIDLen       = 255
	// optionValueLimit is Block Kit's limit on an option's value.
	optionValueLimit = 150
)

// askQuestions posts Claude's questions with a button per option (a
// multi-select menu and a Submit button for a multi-select question) and
// a Dismiss button.
func (ps *prompts) askQuestions(ctx context.Context, to platform.Target, p platform.QuestionPrompt) (platform.Target, error) {
	text, blocks, err := questionBlocks(p)
	if err != nil {
		return platform.Target{}, fmt.Errorf("asking questions in slack channel %s: %w", to.Channel, err)
	}
	ts, err := ps.wire.post(ctx, to, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...))
	if err != nil {
		return platform.Target{}, fmt.Errorf("asking questions in slack channel %s: %w", to.Channel, err)
	}
	return platform.Target{Platform: ps.name, Channel: to.Channel, Thread: to.Thread, MessageID: ts}, nil
}

// updateQuestions redraws a question prompt: answered questions lose
// their buttons, a closed prompt all of them.
func (ps *prompts) updateQuestions(ctx context.Context, prompt platform.Target, p platform.QuestionPrompt) error {
	text, blocks, err := questionBlocks(p)
	if err != nil {
		return fmt.Errorf("updating questions in slack channel %s: %w", prompt.Channel, err)
	}
	if err := ps.wire.update(ctx, prompt, "questions", slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...)); err != nil {
		return fmt.Errorf("updating questions: %w", err)
	}
	return nil
}

// questionBlocks renders a prompt: its fallback text and its blocks.
func questionBlocks(p platform.QuestionPrompt) (string, []slack.Block, error) {
	if p.RequestID == "" || len(questionBlockPrefix)+2+len(p.RequestID) > maxBlockIDLen {
		return "", nil, fmt.Errorf("request id %q cannot name a block", p.RequestID)
	}
	var texts []string
	var blocks []slack.Block
	addText := func(md string) {
		if strings.TrimSpace(md) == "" {
			return
		}
		parts := splitMrkdwn(md, sectionLimit-100)
		texts = append(texts, parts...)
		blocks = append(blocks, sectionBlocks(parts)...)
	}
	addText(p.Intro)
	open := p.Outcome == ""
	anyOpen := false
	for qi, q := range p.Questions {
		addText(q.Text)
		if !open || q.Done || len(q.Options) == 0 {
			continue
		}
		anyOpen = true
		blockID := questionBlockPrefix + strconv.Itoa(qi) + "|" + p.RequestID
		blocks = append(blocks, slack.NewActionBlock(blockID, questionElements(q)...))
	}
	if open && anyOpen {
		drop := slack.NewButtonBlockElement(actionQuestionDrop, "dismiss", plain("Dismiss"))
		blocks = append(blocks, slack.NewActionBlock(questionBlockPrefix+"x|"+p.RequestID, drop))
	}
	if !open {
		outcome := cut(escapeText(p.Outcome), 1000)
		texts = append(texts, outcome)
		blocks = append(blocks, slack.NewContextBlock("ccq_outcome", slack.NewTextBlockObject(slack.MarkdownType, outcome, false, true)))
	}
	if len(blocks) == 0 {
		return "", nil, fmt.Errorf("the prompt has nothing to show")
	}
	if len(blocks) > maxBlocks {
		return "", nil, fmt.Errorf("the prompt needs %d blocks, more than a message holds", len(blocks))
	}
	return fallbackText(texts), blocks, nil
}

// questionElements are an open question's buttons: one per option, or a
// multi-select menu and Submit.
func questionElements(q platform.Question) []slack.BlockElement {
	if !q.MultiSelect {
		els := make([]slack.BlockElement, 0, len(q.Options))
		for oi, o := range q.Options {
			els = append(els, slack.NewButtonBlockElement(actionQuestionPick+strconv.Itoa(oi), strconv.Itoa(oi), plain(o.Label)))
		}
		return els
	}
	opts := make([]*slack.OptionBlockObject, len(q.Options))
	for oi, o := range q.Options {
		opts[oi] = slack.NewOptionBlockObject(strconv.Itoa(oi), plain(o.Label), nil)
	}
	menu := slack.NewOptionsMultiSelectBlockElement(slack.MultiOptTypeStatic, plain("Choose…"), actionQuestionMenu, opts...)
	for oi, o := range opts {
		if q.Selected.Has(oi) {
			menu.InitialOptions = append(menu.InitialOptions, o)
		}
	}
	done := slack.NewButtonBlockElement(actionQuestionDone, "submit", plain("Submit"))
	done.Style = slack.StylePrimary
	return []slack.BlockElement{menu, done}
}

// plain is a plain_text object within a button's limit.
func plain(s string) *slack.TextBlockObject {
	s = strings.TrimSpace(strings.Join(strings.Fields(s), " "))
	if s == "" {
		s = "…"
	}
	return slack.NewTextBlockObject(slack.PlainTextType, cut(s, buttonTextLimit), false, false)
}

// questionAction reads a press on a question prompt; ok is false for
// anything else.
func questionAction(act *slack.BlockAction) (c platform.Choice, question int, options platform.OptionSet, requestID string, ok bool) {
	rest, found := strings.CutPrefix(act.BlockID, questionBlockPrefix)
	if !found {
		return "", 0, 0, "", false
	}
	which, requestID, found := strings.Cut(rest, "|")
	if !found || requestID == "" {
		return "", 0, 0, "", false
	}
	if which == "x" {
		return platform.ChoiceDismiss, 0, 0, requestID, act.ActionID == actionQuestionDrop
	}
	question, err := strconv.Atoi(which)
	if err != nil || question < 0 {
		return "", 0, 0, "", false
	}
	switch {
	case strings.HasPrefix(act.ActionID, actionQuestionPick):
		o, err := strconv.Atoi(strings.TrimPrefix(act.ActionID, actionQuestionPick))
		if err != nil || o < 0 {
			return "", 0, 0, "", false
		}
		return platform.ChoiceAnswer, question, platform.Options(o), requestID, true
	case act.ActionID == actionQuestionMenu:
		for _, so := range act.SelectedOptions {
			if o, err := strconv.Atoi(so.Value); err == nil {
				options = options.With(o)
			}
		}
		return platform.ChoiceSelect, question, options, requestID, true
	case act.ActionID == actionQuestionDone:
		return platform.ChoiceSubmit, question, 0, requestID, true
	}
	return "", 0, 0, "", false
}

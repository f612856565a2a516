package discord

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/permbutton"
)

// Claude's questions on Discord: buttons and select menus under the
// questions' text.

// Discord's limits on components: five action rows a message, five
// buttons a row, 80 characters of label, 25 options a select menu.
const (
	maxRows        = 5
	maxRowButtons  = 5
	buttonLabelMax = 80
	maxMenuOptions = 25
)

// askQuestions posts Claude's questions: the text of all of them, then an
// action row per open question (a button per option, or a multi-select
// menu whose closing answers it) and one with Dismiss. Text over one
// message goes first as messages of its own; the components go under the
// last part.
func (ps *prompts) askQuestions(ctx context.Context, to platform.Target, p platform.QuestionPrompt) (platform.Target, error) {
	parts, comps, err := ps.questionMessage(p)
	if err != nil {
		return platform.Target{}, fmt.Errorf("asking questions in %s: %w", to.Channel, err)
	}
	ch, err := ps.wire.postChannel(ctx, to)
	if err != nil {
		return platform.Target{}, err
	}
	for i, part := range parts[:len(parts)-1] {
		if _, err := ps.wire.post(ctx, ch, &discordgo.MessageSend{Content: part, AllowedMentions: noMentions()}); err != nil {
			return platform.Target{}, fmt.Errorf("asking questions in %s: part %d/%d: %w", ch, i+1, len(parts), err)
		}
	}
	m, err := ps.wire.post(ctx, ch, &discordgo.MessageSend{Content: parts[len(parts)-1], Components: comps, AllowedMentions: noMentions()})
	if err != nil {
		return platform.Target{}, fmt.Errorf("asking questions in %s: %w", ch, err)
	}
	posted := platform.Target{Platform: ps.name, Channel: to.Channel, Thread: to.Thread, MessageID: m.ID}
	ps.open.Put(m.ID, postedPrompt{content: parts[len(parts)-1], target: posted})
	return posted, nil
}

// updateQuestions redraws the prompt's message: answered questions lose
// their components, a closed prompt all of them. Only the message holding
// the components is edited: when the text is over one message, it shows
// the last part of the text as it is now.
func (ps *prompts) updateQuestions(ctx context.Context, prompt platform.Target, p platform.QuestionPrompt) error {
	parts, comps, err := ps.questionMessage(p)
	if err != nil {
		return fmt.Errorf("updating questions in %s: %w", prompt.Channel, err)
	}
	if comps == nil {
		comps = []discordgo.MessageComponent{}
	}
	if err := ps.wire.edit(ctx, prompt, "", parts[len(parts)-1], &comps); err != nil {
		return fmt.Errorf("updating questions: %w", err)
	}
	return nil
}

// questionMessage renders a prompt: its content in parts, and the
// components that go under the last.
func (ps *prompts) questionMessage(p platform.QuestionPrompt) ([]string, []discordgo.MessageComponent, error) {
	if p.RequestID == "" {
		return nil, nil, errors.New("the prompt has no request id")
	}
	ref := ps.refs.QuestionRef(p.RequestID)
	var texts []string
	if strings.TrimSpace(p.Intro) != "" {
		texts = append(texts, p.Intro)
	}
	open := p.Outcome == ""
	var rows []discordgo.MessageComponent
	for qi, q := range p.Questions {
		texts = append(texts, q.Text)
		if !open || q.Done || len(q.Options) == 0 {
			continue
		}
		row, err := questionRow(qi, q, ref)
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, row)
	}
	if len(rows) > 0 {
		rows = append(rows, discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.Button{
			Label: "Dismiss", Style: discordgo.SecondaryButton, CustomID: permbutton.QuestionData(platform.ChoiceDismiss, 0, 0, ref)}}})
	}
	if len(rows) > maxRows {
		return nil, nil, fmt.Errorf("%d open questions need more than the %d rows of a message", len(rows)-1, maxRows)
	}
	if !open {
		texts = append(texts, "**"+strings.ReplaceAll(p.Outcome, "*", "\\*")+"**")
	}
	text := strings.Join(texts, "\n\n")
	if strings.TrimSpace(text) == "" {
		return nil, nil, errors.New("the prompt has nothing to show")
	}
	return splitForDiscord(discordMarkdown(text)), rows, nil
}

// questionRow is an open question's row: a button per option, or a
// multi-select menu.
func questionRow(qi int, q platform.Question, ref string) (discordgo.MessageComponent, error) {
	if qi > 9 || len(q.Options) > 10 {
		return nil, fmt.Errorf("question %d has more options or questions than a button can name", qi+1)
	}
	if !q.MultiSelect {
		if len(q.Options) > maxRowButtons {
			return nil, fmt.Errorf("question %d has %d options, more than a row of buttons holds", qi+1, len(q.Options))
		}
		var buttons []discordgo.MessageComponent
		for oi, o := range q.Options {
			buttons = append(buttons, discordgo.Button{Label: buttonLabel(o.Label), Style: discordgo.PrimaryButton,
				CustomID: permbutton.QuestionData(platform.ChoiceAnswer, qi, oi, ref)})
		}
		return discordgo.ActionsRow{Components: buttons}, nil
	}
	opts := make([]discordgo.SelectMenuOption, len(q.Options))
	for oi, o := range q.Options {
		opts[oi] = discordgo.SelectMenuOption{Label: buttonLabel(o.Label), Value: strconv.Itoa(oi), Default: q.Selected.Has(oi)}
	}
	one := 1
	return discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.SelectMenu{
		MenuType:    discordgo.StringSelectMenu,
		CustomID:    permbutton.QuestionData(platform.ChoiceAnswer, qi, 0, ref),
		Placeholder: "Choose, then close the menu",
		MinValues:   &one,
		MaxValues:   len(opts),
		Options:     opts,
	}}}, nil
}

// buttonLabel is an option's label on one line within Discord's limit.
func buttonLabel(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "…"
	}
	if r := []rune(s); len(r) > buttonLabelMax {
		return string(r[:buttonLabelMax-1]) + "…"
	}
	return s
}

// questionPress reads a press on a question prompt; ok is false for a
// component that is not one.
func questionPress(data discordgo.MessageComponentInteractionData) (c platform.Choice, q int, opts platform.OptionSet, ref string, ok bool) {
	c, q, o, ref, ok := permbutton.DecodeQuestion(data.CustomID)
	if !ok {
		return "", 0, 0, "", false
	}
	if c != platform.ChoiceAnswer {
		return c, q, 0, ref, true
	}
	if data.ComponentType != discordgo.SelectMenuComponent {
		return c, q, platform.Options(o), ref, true
	}
	for _, v := range data.Values {
		i, err := strconv.Atoi(v)
		if err != nil {
			return "", 0, 0, "", false
		}
		opts = opts.With(i)
	}
	return c, q, opts, ref, opts != 0
}

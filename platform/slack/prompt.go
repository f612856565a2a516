package slack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/recent"
)

// Action ids of the permission buttons. The button value is the request
// id: a Block Kit button carries an action id and a value of up to 2,000
// characters, so unlike Discord and Telegram (platform/internal/permbutton)
// the id needs no short reference.
const (
	actionAllow       = "cc_perm_allow"
	actionAlwaysAllow = "cc_perm_always"
	actionDeny        = "cc_perm_deny"
	// A plan's buttons (PermissionPrompt.Choices).
	actionPlanDefault     = "cc_plan_default"
	actionPlanAcceptEdits = "cc_plan_accept_edits"
	actionPlanKeep        = "cc_plan_keep"
	// A turn's summary: undo what the turn changed.
	actionRevert = "cc_turn_revert"
)

var actionChoices = map[string]platform.Choice{
	actionAllow:           platform.ChoiceAllow,
	actionAlwaysAllow:     platform.ChoiceAlwaysAllow,
	actionDeny:            platform.ChoiceDeny,
	actionPlanDefault:     platform.ChoicePlanDefault,
	actionPlanAcceptEdits: platform.ChoicePlanAcceptEdits,
	actionPlanKeep:        platform.ChoicePlanKeep,
	actionRevert:          platform.ChoiceRevert,
}

func choiceForAction(actionID string) (platform.Choice, bool) {
	c, ok := actionChoices[actionID]
	return c, ok
}

// actionForChoice is the action id of a choice's button.
func actionForChoice(c platform.Choice) (string, bool) {
	for id, ch := range actionChoices {
		if ch == c {
			return id, true
		}
	}
	return "", false
}

// Block Kit limits that a prompt must respect: a section's text, the
// blocks of one message (the buttons and the outcome take one each), and
// a message's text, which Slack truncates past 40,000 characters.
const (
	sectionLimit   = 3000
	maxBlocks      = 50
	messageTextCap = 40000
)

// buttonTextLimit is Block Kit's limit on a button's plain text.
const buttonTextLimit = 75

// prompts shows permission requests and Claude's questions with buttons,
// remembers what an open prompt said, and reads presses back as actions.
type prompts struct {
	name string
	wire *wire
	// open remembers the text of open prompts ("channel:ts") so the
	// resolved message can keep showing what was asked. After a restart or
	// once full, a resolution shows the outcome under a generic title.
	open *recent.Map[[]string]
}

// actions reads the presses of a block_actions interaction as actions:
// permission buttons, plan buttons and question prompts; none for other
// interactions and foreign buttons.
func (ps *prompts) actions(cb slack.InteractionCallback) []platform.Action {
	if cb.Type != slack.InteractionTypeBlockActions {
		return nil
	}
	var actions []platform.Action
	channel := orDefault(cb.Container.ChannelID, cb.Channel.ID)
	msgTS := orDefault(cb.Container.MessageTs, cb.Message.Timestamp)
	thread := orDefault(cb.Container.ThreadTs, cb.Message.ThreadTimestamp)
	for _, act := range cb.ActionCallback.BlockActions {
		action := platform.Action{
			Target: platform.Target{
				Platform:  ps.name,
				Channel:   channel,
				Thread:    thread,
				MessageID: msgTS,
			},
			UserID:   cb.User.ID,
			UserName: orDefault(cb.User.Name, cb.User.ID),
		}
		if act.ActionTs != "" {
			action.ID = act.ActionTs + ":" + act.ActionID + ":" + cb.User.ID
		}
		if c, q, opts, reqID, ok := questionAction(act); ok {
			action.Choice, action.Question, action.Options, action.RequestID = c, q, opts, reqID
		} else if choice, ok := choiceForAction(act.ActionID); ok && act.Value != "" {
			action.Choice, action.RequestID = choice, act.Value
		} else {
			continue
		}
		actions = append(actions, action)
	}
	return actions
}

// askPermission posts a Block Kit prompt with Allow / Always allow / Deny
// buttons. Presses come back through Handler.HandleAction. The prompt's
// whole text is shown: it is split over as many sections as it needs
// (promptSections), and a prompt too big for one message is refused rather
// than cut, so the engine can deny it.
func (ps *prompts) askPermission(ctx context.Context, to platform.Target, p platform.PermissionPrompt) (platform.Target, error) {
	if p.RequestID == "" {
		return platform.Target{}, fmt.Errorf("asking permission in slack channel %s: empty request id", to.Channel)
	}
	sections := splitMrkdwn(p.Text, sectionLimit-100)
	if len(sections) > maxBlocks-2 {
		return platform.Target{}, fmt.Errorf("asking permission in slack channel %s: the prompt needs %d sections, more than a message holds", to.Channel, len(sections))
	}
	button := func(id, label string, style slack.Style) *slack.ButtonBlockElement {
		b := slack.NewButtonBlockElement(id, p.RequestID, slack.NewTextBlockObject(slack.PlainTextType, label, false, false))
		b.Style = style
		return b
	}
	buttons := []slack.BlockElement{
		button(actionAllow, "Allow", slack.StylePrimary),
		button(actionAlwaysAllow, "Always allow", slack.StyleDefault),
		button(actionDeny, "Deny", slack.StyleDanger),
	}
	if len(p.Choices) > 0 {
		buttons = buttons[:0]
		for _, c := range p.Choices {
			id, ok := actionForChoice(c.Choice)
			if !ok {
				return platform.Target{}, fmt.Errorf("asking permission in slack channel %s: no button for choice %q", to.Channel, c.Choice)
			}
			buttons = append(buttons, button(id, cut(c.Label, buttonTextLimit), slack.Style(c.Style)))
		}
	}
	blocks := append(sectionBlocks(sections), slack.NewActionBlock("cc_perm", buttons...))
	// The text is what notifications and clients without blocks show.
	ts, err := ps.wire.post(ctx, to, slack.MsgOptionText(fallbackText(sections), false), slack.MsgOptionBlocks(blocks...))
	if err != nil {
		return platform.Target{}, fmt.Errorf("asking permission in slack channel %s: %w", to.Channel, err)
	}
	ps.open.Put(to.Channel+":"+ts, sections)
	return platform.Target{Platform: ps.name, Channel: to.Channel, Thread: to.Thread, MessageID: ts}, nil
}

// sectionBlocks makes a section of each text. verbatim keeps Slack from
// finding links, channel names and mentions in it by itself.
func sectionBlocks(texts []string) []slack.Block {
	blocks := make([]slack.Block, 0, len(texts)+2)
	for _, t := range texts {
		blocks = append(blocks, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, t, false, true), nil, nil))
	}
	return blocks
}

// fallbackText is the message text of a prompt: whole when Slack keeps it
// whole; else cut, since the blocks carry all of it.
func fallbackText(sections []string) string {
	mrkdwn := strings.Join(sections, "\n")
	if r := []rune(mrkdwn); len(r) > messageTextCap-100 {
		return string(r[:messageTextCap-100]) + "…"
	}
	return mrkdwn
}

// cut shortens escaped text to at most n runes, marking the cut with an
// ellipsis and never leaving half an entity (&am…) behind.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n-1]
	if i := lastIndexRune(r, '&'); i >= 0 && i >= len(r)-4 && lastIndexRune(r[i:], ';') < 0 {
		r = r[:i]
	}
	return string(r) + "…"
}

func lastIndexRune(r []rune, c rune) int {
	for i := len(r) - 1; i >= 0; i-- {
		if r[i] == c {
			return i
		}
	}
	return -1
}

// resolvePermission edits the prompt to show the outcome (e.g. "Allowed
// by Ann") in place of the buttons, so nobody presses them again.
func (ps *prompts) resolvePermission(ctx context.Context, prompt platform.Target, outcome string) error {
	ts := messageTS(prompt.MessageID)
	sections, ok := ps.open.Take(prompt.Channel + ":" + ts)
	if !ok {
		sections = []string{":lock: *Permission request*"}
	}
	result := cut(escapeText(outcome), 1000)
	blocks := append(sectionBlocks(sections),
		slack.NewContextBlock("cc_perm_outcome", slack.NewTextBlockObject(slack.MarkdownType, result, false, true)))
	err := ps.wire.update(ctx, prompt, result, slack.MsgOptionText(fallbackText(append(slices.Clone(sections), result)), false), slack.MsgOptionBlocks(blocks...))
	if err != nil {
		return fmt.Errorf("resolving permission prompt: %w", err)
	}
	return nil
}

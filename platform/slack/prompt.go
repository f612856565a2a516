package slack

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/cc-connect/cc-connect/platform"
)

// Action ids of the permission buttons. The button value is the request
// id: a Block Kit button carries an action id and a value of up to 2,000
// characters, so unlike Discord and Telegram (platform/internal/permbutton)
// the id needs no short reference.
const (
	actionAllow       = "cc_perm_allow"
	actionAlwaysAllow = "cc_perm_always"
	actionDeny        = "cc_perm_deny"
)

func choiceForAction(actionID string) (platform.Choice, bool) {
	switch actionID {
	case actionAllow:
		return platform.ChoiceAllow, true
	case actionAlwaysAllow:
		return platform.ChoiceAlwaysAllow, true
	case actionDeny:
		return platform.ChoiceDeny, true
	}
	return "", false
}

// AskPermission posts a Block Kit prompt with Allow / Always allow / Deny
// buttons. Presses come back through Handler.HandleAction.
func (a *Adapter) AskPermission(ctx context.Context, to platform.Target, p platform.PermissionPrompt) (platform.Target, error) {
	if p.RequestID == "" {
		return platform.Target{}, fmt.Errorf("asking permission in slack channel %s: empty request id", to.Channel)
	}
	text := promptText(p)
	button := func(id, label string, style slack.Style) *slack.ButtonBlockElement {
		b := slack.NewButtonBlockElement(id, p.RequestID, slack.NewTextBlockObject(slack.PlainTextType, label, false, false))
		b.Style = style
		return b
	}
	blocks := []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil),
		slack.NewActionBlock("cc_perm",
			button(actionAllow, "Allow", slack.StylePrimary),
			button(actionAlwaysAllow, "Always allow", slack.StyleDefault),
			button(actionDeny, "Deny", slack.StyleDanger),
		),
	}
	// The text is what notifications and clients without blocks show.
	ts, err := a.post(ctx, to, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...))
	if err != nil {
		return platform.Target{}, fmt.Errorf("asking permission in slack channel %s: %w", to.Channel, err)
	}
	a.prompts.Put(to.Channel+":"+ts, text)
	return platform.Target{Platform: a.cfg.Name, Channel: to.Channel, Thread: to.Thread, MessageID: ts}, nil
}

// promptText renders the request in mrkdwn (the Discord and Telegram
// adapters render the same fields in their own markup); the summary and
// path are Claude's and are escaped. Block Kit refuses a section over
// 3,000 characters, so the parts are cut to fit.
func promptText(p platform.PermissionPrompt) string {
	var b strings.Builder
	b.WriteString(":lock: *Permission needed*")
	if p.Tool != "" {
		b.WriteString(": `" + strings.ReplaceAll(cut(escapeText(p.Tool), 100), "`", "'") + "`")
	}
	if p.Summary != "" {
		b.WriteString("\n" + cut(escapeText(p.Summary), 2000))
	}
	if p.Path != "" {
		b.WriteString("\nPath: `" + strings.ReplaceAll(cut(escapeText(p.Path), 500), "`", "'") + "`")
	}
	return b.String()
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

// ResolvePermission edits the prompt to show the outcome (e.g. "Allowed
// by Ann") in place of the buttons, so nobody presses them again.
func (a *Adapter) ResolvePermission(ctx context.Context, prompt platform.Target, outcome string) error {
	ts := messageTS(prompt.MessageID)
	text, ok := a.prompts.Take(prompt.Channel + ":" + ts)
	if !ok {
		text = ":lock: *Permission request*"
	}
	result := cut(escapeText(outcome), 1000)
	blocks := []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil),
		slack.NewContextBlock("cc_perm_outcome", slack.NewTextBlockObject(slack.MarkdownType, result, false, false)),
	}
	err := a.update(ctx, prompt, result, slack.MsgOptionText(text+"\n"+result, false), slack.MsgOptionBlocks(blocks...))
	if err != nil {
		return fmt.Errorf("resolving permission prompt: %w", err)
	}
	return nil
}

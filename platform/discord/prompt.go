package discord

import (
	"context"
	"fmt"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/permbutton"
)

// maxCustomID is Discord's limit on a component's custom_id, which carries
// a permbutton payload.
const maxCustomID = 100

// postedPrompt is what the adapter remembers of a prompt it posted: its
// content, to show it again with the outcome, and its Target, to address
// the Action of a press.
type postedPrompt struct {
	content string
	target  platform.Target
}

// promptContent renders the prompt in Discord markdown. The Telegram
// adapter renders the same fields in HTML and Slack in mrkdwn: the markup
// differs, so each adapter keeps its own.
func promptContent(p platform.PermissionPrompt) string {
	var b strings.Builder
	b.WriteString("🔐 **Permission needed**: `" + strings.ReplaceAll(p.Tool, "`", "ˋ") + "`")
	if p.Summary != "" {
		summary := strings.ReplaceAll(p.Summary, "```", "ˋˋˋ")
		if r := []rune(summary); len(r) > 1500 {
			summary = string(r[:1500]) + "…"
		}
		b.WriteString("\n```\n" + summary + "\n```")
	}
	if p.Path != "" {
		b.WriteString("\nPath: `" + strings.ReplaceAll(p.Path, "`", "ˋ") + "`")
	}
	return b.String()
}

// AskPermission posts the request with Allow, Always allow and Deny
// buttons; presses come back through Handler.HandleAction with the
// presser's user id.
func (a *Adapter) AskPermission(ctx context.Context, to platform.Target, p platform.PermissionPrompt) (platform.Target, error) {
	ch, err := a.postChannel(ctx, to)
	if err != nil {
		return platform.Target{}, err
	}
	ref := a.promptRefs.Ref(p.RequestID)
	button := func(label string, style discordgo.ButtonStyle, c platform.Choice) discordgo.MessageComponent {
		return discordgo.Button{Label: label, Style: style, CustomID: permbutton.Data(c, ref)}
	}
	content := promptContent(p)
	send := &discordgo.MessageSend{
		Content:         content,
		AllowedMentions: noMentions(),
		Components: []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			button("Allow", discordgo.SuccessButton, platform.ChoiceAllow),
			button("Always allow", discordgo.PrimaryButton, platform.ChoiceAlwaysAllow),
			button("Deny", discordgo.DangerButton, platform.ChoiceDeny),
		}}},
	}
	var m *discordgo.Message
	err = a.rest(ctx, func(opts ...discordgo.RequestOption) error {
		var err error
		m, err = a.session.ChannelMessageSendComplex(ch, send, opts...)
		return err
	})
	if err != nil {
		return platform.Target{}, fmt.Errorf("asking permission in %s: %w", ch, err)
	}
	posted := platform.Target{Platform: a.cfg.Name, Channel: to.Channel, Thread: to.Thread, MessageID: m.ID}
	a.prompts.Put(posted.MessageID, postedPrompt{content: content, target: posted})
	return posted, nil
}

// ResolvePermission shows the outcome under the prompt and removes the
// buttons.
func (a *Adapter) ResolvePermission(ctx context.Context, prompt platform.Target, outcome string) error {
	id := bareID(prompt.MessageID)
	ch := msgChannel(prompt)
	pp, _ := a.prompts.Get(id)
	content := pp.content
	if content != "" {
		content += "\n"
	}
	content += "**" + outcome + "**"
	none := []discordgo.MessageComponent{}
	err := a.rest(ctx, func(opts ...discordgo.RequestOption) error {
		e := &discordgo.MessageEdit{ID: id, Channel: ch, Content: &content, Components: &none, AllowedMentions: noMentions()}
		_, err := a.session.ChannelMessageEditComplex(e, opts...)
		return err
	})
	if err != nil {
		return fmt.Errorf("resolving permission prompt %s in %s: %w", id, ch, err)
	}
	return nil
}

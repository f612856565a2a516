package discord

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf16"

	"github.com/bwmarrin/discordgo"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/permbutton"
)

// maxCustomID is Discord's limit on a component's custom_id, which carries
// a permbutton payload.
const maxCustomID = 100

// buttonStyles maps a PromptChoice's style to Discord's.
var buttonStyles = map[string]discordgo.ButtonStyle{
	"primary": discordgo.PrimaryButton,
	"danger":  discordgo.DangerButton,
	"":        discordgo.SecondaryButton,
}

// postedPrompt is what the adapter remembers of a prompt it posted: its
// content, to show it again with the outcome, and its Target, to address
// the Action of a press.
type postedPrompt struct {
	content string
	target  platform.Target
}

// AskPermission posts the request with Allow, Always allow and Deny
// buttons; presses come back through Handler.HandleAction with the
// presser's user id. The request's text is shown whole: when it is over
// one message, the parts before the last are posted first and the buttons
// go under the last.
func (a *Adapter) AskPermission(ctx context.Context, to platform.Target, p platform.PermissionPrompt) (platform.Target, error) {
	ch, err := a.postChannel(ctx, to)
	if err != nil {
		return platform.Target{}, err
	}
	parts := splitForDiscord(discordMarkdown(p.Text))
	for i, part := range parts[:len(parts)-1] {
		err := a.rest(ctx, func(opts ...discordgo.RequestOption) error {
			_, err := a.session.ChannelMessageSendComplex(ch, &discordgo.MessageSend{Content: part, AllowedMentions: noMentions()}, opts...)
			return err
		})
		if err != nil {
			return platform.Target{}, fmt.Errorf("asking permission in %s: part %d/%d: %w", ch, i+1, len(parts), err)
		}
	}
	ref := a.promptRefs.Ref(p.RequestID)
	button := func(label string, style discordgo.ButtonStyle, c platform.Choice) discordgo.MessageComponent {
		return discordgo.Button{Label: label, Style: style, CustomID: permbutton.Data(c, ref)}
	}
	content := parts[len(parts)-1]
	buttons := []discordgo.MessageComponent{
		button("Allow", discordgo.SuccessButton, platform.ChoiceAllow),
		button("Always allow", discordgo.PrimaryButton, platform.ChoiceAlwaysAllow),
		button("Deny", discordgo.DangerButton, platform.ChoiceDeny),
	}
	if len(p.Choices) > 0 {
		buttons = buttons[:0]
		for _, c := range p.Choices {
			if !permbutton.Known(c.Choice) {
				return platform.Target{}, fmt.Errorf("asking permission in %s: no button for choice %q", ch, c.Choice)
			}
			buttons = append(buttons, button(buttonLabel(c.Label), buttonStyles[c.Style], c.Choice))
		}
	}
	send := &discordgo.MessageSend{
		Content:         content,
		AllowedMentions: noMentions(),
		Components:      []discordgo.MessageComponent{discordgo.ActionsRow{Components: buttons}},
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
// buttons. A prompt with no room left for the outcome keeps its text, and
// the outcome follows as a message of its own.
func (a *Adapter) ResolvePermission(ctx context.Context, prompt platform.Target, outcome string) error {
	id := bareID(prompt.MessageID)
	ch := msgChannel(prompt)
	pp, _ := a.prompts.Get(id)
	result := "**" + strings.ReplaceAll(outcome, "*", "\\*") + "**"
	content := result
	separate := false
	if pp.content != "" {
		content = pp.content + "\n" + result
		if len(utf16.Encode([]rune(content))) > messageLimit {
			content, separate = pp.content, true
		}
	}
	none := []discordgo.MessageComponent{}
	err := a.rest(ctx, func(opts ...discordgo.RequestOption) error {
		e := &discordgo.MessageEdit{ID: id, Channel: ch, Content: &content, Components: &none, AllowedMentions: noMentions()}
		_, err := a.session.ChannelMessageEditComplex(e, opts...)
		return err
	})
	if err != nil {
		return fmt.Errorf("resolving permission prompt %s in %s: %w", id, ch, err)
	}
	if separate {
		to := prompt
		to.MessageID = ""
		if _, err := a.Send(ctx, to, result); err != nil {
			return fmt.Errorf("posting the outcome of permission prompt %s in %s: %w", id, ch, err)
		}
	}
	return nil
}

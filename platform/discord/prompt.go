package discord

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf16"

	"github.com/bwmarrin/discordgo"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/permbutton"
	"github.com/cc-connect/cc-connect/platform/internal/recent"
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

// prompts shows permission requests and Claude's questions with buttons,
// remembers the prompts it posted, and reads presses on them back as
// actions.
type prompts struct {
	name   string
	log    *slog.Logger
	wire   *wire
	reader *reader // where a press was made, when the prompt is forgotten
	// answered are the presses answered lately, each once.
	answered *recent.Map[struct{}]
	// open remembers recent prompts by message id; refs maps their
	// buttons back to request ids.
	open *recent.Map[postedPrompt]
	refs *permbutton.Refs
}

// postedPrompt is what the adapter remembers of a prompt it posted: its
// content, to show it again with the outcome, and its Target, to address
// the Action of a press.
type postedPrompt struct {
	content string
	target  platform.Target
}

// askPermission posts the request with Allow, Always allow and Deny
// buttons; presses come back through Handler.HandleAction with the
// presser's user id. The request's text is shown whole: when it is over
// one message, the parts before the last are posted first and the buttons
// go under the last.
func (ps *prompts) askPermission(ctx context.Context, to platform.Target, p platform.PermissionPrompt) (platform.Target, error) {
	ch, err := ps.wire.postChannel(ctx, to)
	if err != nil {
		return platform.Target{}, err
	}
	parts := splitForDiscord(discordMarkdown(p.Text))
	for i, part := range parts[:len(parts)-1] {
		if _, err := ps.wire.post(ctx, ch, &discordgo.MessageSend{Content: part, AllowedMentions: noMentions()}); err != nil {
			return platform.Target{}, fmt.Errorf("asking permission in %s: part %d/%d: %w", ch, i+1, len(parts), err)
		}
	}
	ref := ps.refs.Ref(p.RequestID)
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
	m, err := ps.wire.post(ctx, ch, send)
	if err != nil {
		return platform.Target{}, fmt.Errorf("asking permission in %s: %w", ch, err)
	}
	posted := platform.Target{Platform: ps.name, Channel: to.Channel, Thread: to.Thread, MessageID: m.ID}
	ps.open.Put(posted.MessageID, postedPrompt{content: content, target: posted})
	return posted, nil
}

// resolvePermission shows the outcome under the prompt and removes the
// buttons. A prompt with no room left for the outcome keeps its text, and
// the outcome follows as a message of its own.
func (ps *prompts) resolvePermission(ctx context.Context, prompt platform.Target, outcome string) error {
	id := bareID(prompt.MessageID)
	ch := msgChannel(prompt)
	pp, _ := ps.open.Get(id)
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
	if err := ps.wire.editNow(ctx, prompt, content, &none); err != nil {
		return fmt.Errorf("resolving permission prompt %s in %s: %w", id, ch, err)
	}
	if separate {
		to := prompt
		to.MessageID = ""
		if _, err := ps.wire.send(ctx, to, nil, result); err != nil {
			return fmt.Errorf("posting the outcome of permission prompt %s in %s: %w", id, ch, err)
		}
	}
	return nil
}

// firstPress reports whether the interaction id is new: a press is
// answered once, since a second copy of the interaction would fail its
// response and answer the prompt twice.
func (ps *prompts) firstPress(id string) bool {
	if _, dup := ps.answered.Get(id); dup {
		return false
	}
	ps.answered.Put(id, struct{}{})
	return true
}

// press reads a button press or a menu's choice on one of the adapter's
// prompts as an action, all but its Target (target finds it); false for
// a press on anything else.
func (ps *prompts) press(i *discordgo.Interaction) (platform.Action, bool) {
	data := i.MessageComponentData()
	var (
		question int
		options  platform.OptionSet
	)
	choice, ref, ok := permbutton.Decode(data.CustomID)
	if !ok {
		choice, question, options, ref, ok = questionPress(data)
	}
	if !ok {
		return platform.Action{}, false
	}
	reqID, ok := ps.refs.RequestID(ref)
	if !ok {
		ps.log.Warn("Discord button press for an unknown prompt", "channel", i.ChannelID)
		return platform.Action{}, false
	}
	u := i.User
	if i.Member != nil && i.Member.User != nil {
		u = i.Member.User
	}
	if u == nil || i.Message == nil {
		return platform.Action{}, false
	}
	return platform.Action{ID: i.ID, UserID: u.ID, UserName: u.Username, RequestID: reqID, Choice: choice,
		Question: question, Options: options}, true
}

// target is the prompt a press in channel on message msgID belongs to.
// The prompt's remembered target saves a channel lookup, but only where
// the press was made in that channel: the engine matches a press to its
// request by where it came from too.
func (ps *prompts) target(ctx context.Context, channel, msgID string) platform.Target {
	pp, ok := ps.open.Get(msgID)
	if ok && msgChannel(pp.target) == channel {
		return pp.target
	}
	target := platform.Target{Platform: ps.name, Channel: channel, MessageID: msgID}
	if info, err := ps.reader.channelInfo(ctx, channel); err == nil && info.isThread {
		target.Channel, target.Thread = info.parent, channel
	}
	return target
}

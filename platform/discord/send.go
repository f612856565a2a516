package discord

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/cc-connect/cc-connect/platform"
)

// messageLimit is Discord's limit on a message's content.
const messageLimit = 2000

// splitLimit leaves room under messageLimit for reopened code fences.
const splitLimit = 1900

// errThreadAlreadyCreated is Discord's JSON error code when a thread was
// already started from the message.
const errThreadAlreadyCreated = 160004

// splitForDiscord splits Markdown (Discord renders it natively) into parts
// that each fit in one message; SplitMessage counts runes, Discord counts
// UTF-16 units, so a part heavy in emoji is split again.
func splitForDiscord(text string) []string {
	return platform.SplitMessageUTF16(text, splitLimit, messageLimit)
}

// noMentions keeps replies from pinging anyone (Claude Code may quote
// "@everyone" or a user's handle).
func noMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
}

// msgChannel is where the message a Target points at lives: in its thread,
// except a thread's starter message, which stays in the parent channel
// (a thread started from a message has that message's id).
func msgChannel(t platform.Target) string {
	if t.Thread != "" && t.Thread != bareID(t.MessageID) {
		return t.Thread
	}
	return t.Channel
}

// bareID accepts both "<message_id>" and "<channel_id>:<message_id>".
func bareID(id string) string {
	if i := strings.LastIndexByte(id, ':'); i >= 0 {
		return id[i+1:]
	}
	return id
}

// postChannel returns where new messages for to go, opening the thread
// planned for a top-level message (ThreadPerMessage) on first use.
func (a *Adapter) postChannel(ctx context.Context, to platform.Target) (string, error) {
	if to.Thread == "" || to.Thread == to.Channel {
		return to.Channel, nil
	}
	if a.threads.isKnown(to.Thread) {
		return to.Thread, nil
	}
	name := a.threads.plannedName(to.Thread)
	if name == "" {
		name = defaultThreadName
	}
	err := a.rest(ctx, func(opts ...discordgo.RequestOption) error {
		_, err := a.session.MessageThreadStartComplex(to.Channel, to.Thread, &discordgo.ThreadStart{Name: name, AutoArchiveDuration: 1440}, opts...)
		return err
	})
	var re *discordgo.RESTError
	switch {
	case err == nil:
		a.log.Info("Discord thread opened", "channel", to.Channel, "thread", to.Thread)
	case errors.As(err, &re) && re.Message != nil && re.Message.Code == errThreadAlreadyCreated:
	case errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == 404:
		// Not a message of that channel: the thread is an existing one
		// (for example after a restart); post into it directly.
	default:
		return "", fmt.Errorf("opening thread for message %s in %s: %w", to.Thread, to.Channel, err)
	}
	a.threads.markKnown(to.Thread)
	return to.Thread, nil
}

// Send posts text (Markdown, which Discord renders) split under 2,000
// characters without breaking code blocks, and returns the last message.
func (a *Adapter) Send(ctx context.Context, to platform.Target, text string) (platform.Target, error) {
	return a.send(ctx, to, nil, text)
}

// SendMentioning is Send starting with a mention of each user (<@id>),
// which the first part's allowed_mentions lets notify them, and only them.
func (a *Adapter) SendMentioning(ctx context.Context, to platform.Target, mentions []platform.Mention, text string) (platform.Target, error) {
	ids := make([]string, 0, len(mentions))
	for _, m := range mentions {
		if !snowflakeRE.MatchString(m.UserID) {
			return platform.Target{}, fmt.Errorf("discord send to %s: %q is not a Discord user id", to.Channel, m.UserID)
		}
		ids = append(ids, m.UserID)
	}
	return a.send(ctx, to, ids, text)
}

var snowflakeRE = regexp.MustCompile(`^[0-9]{1,20}$`)

// send posts text in parts, the first starting with a mention of each of
// users, the only ids its allowed_mentions names.
func (a *Adapter) send(ctx context.Context, to platform.Target, users []string, text string) (platform.Target, error) {
	if strings.TrimSpace(text) == "" {
		return platform.Target{}, errors.New("discord send: empty text")
	}
	ch, err := a.postChannel(ctx, to)
	if err != nil {
		return platform.Target{}, err
	}
	var prefix strings.Builder
	for _, id := range users {
		prefix.WriteString("<@" + id + "> ")
	}
	parts := platform.SplitMessageUTF16(discordMarkdown(text), splitLimit-prefix.Len(), messageLimit-prefix.Len())
	parts[0] = prefix.String() + parts[0]
	last := platform.Target{}
	for i, part := range parts {
		allowed := noMentions()
		if i == 0 && len(users) > 0 {
			allowed.Users = users
		}
		var m *discordgo.Message
		err := a.rest(ctx, func(opts ...discordgo.RequestOption) error {
			var err error
			m, err = a.session.ChannelMessageSendComplex(ch, &discordgo.MessageSend{Content: part, AllowedMentions: allowed}, opts...)
			return err
		})
		if err != nil {
			return last, fmt.Errorf("sending part %d/%d to %s: %w", i+1, len(parts), ch, err)
		}
		last = platform.Target{Platform: a.cfg.Name, Channel: to.Channel, Thread: to.Thread, MessageID: m.ID}
	}
	return last, nil
}

// Edit replaces a posted message's content (progress updates). Edits in
// one channel are spaced by EditInterval; an edit overtaken while it waits
// is skipped, the newest always applied. Text beyond one message is cut.
func (a *Adapter) Edit(ctx context.Context, msg platform.Target, text string) error {
	id := bareID(msg.MessageID)
	if id == "" {
		return errors.New("discord edit: no message id")
	}
	if parts := splitForDiscord(discordMarkdown(text)); len(parts) > 0 {
		text = parts[0]
	}
	ch := msgChannel(msg)
	key := ch + ":" + id
	return a.edits.Do(ctx, key, ch, text, func(ctx context.Context) error {
		err := a.rest(ctx, func(opts ...discordgo.RequestOption) error {
			e := discordgo.NewMessageEdit(ch, id).SetContent(text)
			e.AllowedMentions = noMentions()
			_, err := a.session.ChannelMessageEditComplex(e, opts...)
			return err
		})
		if err != nil {
			return fmt.Errorf("editing message %s in %s: %w", id, ch, err)
		}
		return nil
	})
}

// Typing shows "<bot> is typing…" for about ten seconds.
func (a *Adapter) Typing(ctx context.Context, to platform.Target) error {
	ch, err := a.postChannel(ctx, to)
	if err != nil {
		return err
	}
	if err := a.rest(ctx, func(opts ...discordgo.RequestOption) error { return a.session.ChannelTyping(ch, opts...) }); err != nil {
		return fmt.Errorf("sending typing to %s: %w", ch, err)
	}
	return nil
}

// emojiByName maps the engine's neutral reaction names to Unicode emoji.
var emojiByName = map[string]string{
	"eyes":             "👀",
	"white_check_mark": "✅",
	"x":                "❌",
	"hourglass":        "⏳",
	"warning":          "⚠️",
}

func emoji(name string) string {
	if e, ok := emojiByName[name]; ok {
		return e
	}
	return name // already an emoji, or a custom "name:id"
}

// React adds the bot's reaction to a message.
func (a *Adapter) React(ctx context.Context, msg platform.Target, name string) error {
	ch, id := msgChannel(msg), bareID(msg.MessageID)
	if err := a.rest(ctx, func(opts ...discordgo.RequestOption) error {
		return a.session.MessageReactionAdd(ch, id, emoji(name), opts...)
	}); err != nil {
		return fmt.Errorf("reacting %s to %s in %s: %w", name, id, ch, err)
	}
	return nil
}

// Unreact removes the bot's own reaction.
func (a *Adapter) Unreact(ctx context.Context, msg platform.Target, name string) error {
	ch, id := msgChannel(msg), bareID(msg.MessageID)
	if err := a.rest(ctx, func(opts ...discordgo.RequestOption) error {
		return a.session.MessageReactionRemove(ch, id, emoji(name), "@me", opts...)
	}); err != nil {
		return fmt.Errorf("removing reaction %s from %s in %s: %w", name, id, ch, err)
	}
	return nil
}

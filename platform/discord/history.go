package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/bwmarrin/discordgo"

	"github.com/cc-connect/cc-connect/platform"
)

const (
	// historyPage is Discord's largest page of channel messages.
	historyPage = 100
	// historyPages bounds the pages read for one History call.
	historyPages = 10
)

// history reads a conversation's earlier messages: a thread's, preceded
// by the message it was started from, or a channel's or DM's own.
func (r *reader) history(ctx context.Context, conv platform.Target, q platform.HistoryQuery) ([]platform.HistoryMessage, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	// Whether a message mentions the bot or is its own depends on who
	// the bot is: after a restart, recovery reads a thread's root before
	// Run has learnt it, and would take the thread as not the bot's.
	if err := r.knownSelf(ctx); err != nil {
		return nil, err
	}
	before := bareID(q.Before)
	ch := conv.Channel
	inThread := conv.Thread != "" && conv.Thread != conv.Channel
	if inThread {
		ch = conv.Thread
		if before == conv.Thread {
			return nil, nil // the conversation starts with the message itself
		}
	}
	var root *platform.HistoryMessage
	if inThread {
		m, err := r.message(ctx, conv.Channel, conv.Thread)
		switch {
		case err == nil:
			if hm, ok := r.historyMessage(ch, m); ok {
				hm.Root = true
				root = &hm
			}
		case isStatus(err, http.StatusNotFound), isStatus(err, http.StatusForbidden):
			// Not started from a message, or its history is not the
			// bot's to read: no root, as the history shows none then.
		default:
			return nil, fmt.Errorf("reading the start of discord thread %s: %w", conv.Thread, err)
		}
	}
	want := q.Limit
	if root != nil {
		want--
	}
	latest, err := r.channelMessages(ctx, ch, before, want, inThread)
	if err != nil {
		return nil, err
	}
	if root == nil {
		// A forum post's starter message is in the thread, with its id.
		if i := slices.IndexFunc(latest, func(m platform.HistoryMessage) bool { return m.MessageID == conv.Thread }); i >= 0 && inThread {
			latest[i].Root = true
			r := latest[i]
			latest = append([]platform.HistoryMessage{r}, slices.Delete(latest, i, i+1)...)
		}
		return latest, nil
	}
	return append([]platform.HistoryMessage{*root}, latest...), nil
}

// channelMessages reads the latest n messages of ch before before, oldest
// first. A thread that does not exist yet (a planned ThreadPerMessage
// thread) has none.
func (r *reader) channelMessages(ctx context.Context, ch, before string, n int, thread bool) ([]platform.HistoryMessage, error) {
	var out []platform.HistoryMessage
	for range historyPages {
		if len(out) >= n {
			break
		}
		var page []*discordgo.Message
		err := r.wire.rest(ctx, func(opts ...discordgo.RequestOption) error {
			var err error
			page, err = r.wire.session.ChannelMessages(ch, historyPage, before, "", "", opts...)
			return err
		})
		if thread && isStatus(err, http.StatusNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading discord channel %s: %w", ch, err)
		}
		for _, m := range page { // newest first
			if hm, ok := r.historyMessage(ch, m); ok && len(out) < n {
				out = append(out, hm)
			}
		}
		if len(page) < historyPage {
			break
		}
		before = page[len(page)-1].ID
	}
	slices.Reverse(out)
	return out, nil
}

// message reads one message.
func (r *reader) message(ctx context.Context, ch, id string) (*discordgo.Message, error) {
	var m *discordgo.Message
	err := r.wire.rest(ctx, func(opts ...discordgo.RequestOption) error {
		var err error
		m, err = r.wire.session.ChannelMessage(ch, id, opts...)
		return err
	})
	return m, err
}

// historyMessage reads a message by the rules toMessage applies to
// events; ok is false for system messages (joins, pins, a thread's starter
// notice).
func (r *reader) historyMessage(ch string, m *discordgo.Message) (platform.HistoryMessage, bool) {
	if m == nil || m.Author == nil || (m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply) {
		return platform.HistoryMessage{}, false
	}
	self := r.self.get()
	text, mentioned := stripMention(m.Content, self)
	for _, u := range m.Mentions {
		if u != nil && u.ID == self {
			mentioned = true
		}
	}
	if role := r.ownRoleMentioned(m.GuildID, m.MentionRoles); role != "" {
		mentioned = true
		text, _ = stripTag(text, "<@&"+role+">")
	}
	hm := platform.HistoryMessage{
		ID:        ch + ":" + m.ID,
		MessageID: m.ID,
		UserID:    m.Author.ID,
		UserName:  m.Author.Username,
		Text:      text,
		Time:      m.Timestamp,
		Seq:       snowflakeSeq(m.ID),
		IsBot:     m.Author.Bot || m.WebhookID != "",
		FromSelf:  m.Author.ID == self,
		Mentioned: mentioned,
	}
	for _, at := range m.Attachments {
		if at != nil {
			hm.Files = append(hm.Files, at.Filename)
		}
	}
	return hm, true
}

func isStatus(err error, status int) bool {
	var re *discordgo.RESTError
	return errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == status
}

// knownSelf makes sure the bot's user id is known, reading it once
// (GET /users/@me) when Run has not learnt it yet.
func (r *reader) knownSelf(ctx context.Context) error {
	if r.self.get() != "" {
		return nil
	}
	var u *discordgo.User
	err := r.wire.rest(ctx, func(opts ...discordgo.RequestOption) error {
		var err error
		u, err = r.wire.session.User("@me", opts...)
		return err
	})
	if err != nil {
		return fmt.Errorf("discord %s: reading the bot's user: %w", r.cfg.Name, err)
	}
	r.self.setIfUnknown(u.ID)
	return nil
}

package discord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/cc-connect/cc-connect/platform"
)

var (
	_ platform.HistoryReader = (*Adapter)(nil)
	_ platform.FileSender    = (*Adapter)(nil)
)

const (
	// historyPage is Discord's largest page of channel messages.
	historyPage = 100
	// historyPages bounds the pages read for one History call.
	historyPages = 10
	// UploadLimit is what Discord takes in files per message in a server
	// without boosts (10 MiB); boosted servers take more, which this
	// adapter does not ask about.
	UploadLimit = 10 << 20
)

// History reads a conversation's earlier messages (platform.HistoryReader):
// a thread's messages, preceded by the message it was started from (which
// lives in the parent channel), or a channel's or DM's own. The bot needs
// View Channel and Read Message History there: without the latter Discord
// shows no messages, which is no error.
func (a *Adapter) History(ctx context.Context, conv platform.Target, q platform.HistoryQuery) ([]platform.HistoryMessage, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	// Whether a message mentions the bot or is its own depends on who
	// the bot is: after a restart, recovery reads a thread's root before
	// Run has learnt it, and would take the thread as not the bot's.
	if err := a.knownSelf(ctx); err != nil {
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
		m, err := a.message(ctx, conv.Channel, conv.Thread)
		switch {
		case err == nil:
			if hm, ok := a.historyMessage(ch, m); ok {
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
	latest, err := a.channelMessages(ctx, ch, before, want, inThread)
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
func (a *Adapter) channelMessages(ctx context.Context, ch, before string, n int, thread bool) ([]platform.HistoryMessage, error) {
	var out []platform.HistoryMessage
	for range historyPages {
		if len(out) >= n {
			break
		}
		var page []*discordgo.Message
		err := a.rest(ctx, func(opts ...discordgo.RequestOption) error {
			var err error
			page, err = a.session.ChannelMessages(ch, historyPage, before, "", "", opts...)
			return err
		})
		if thread && isStatus(err, http.StatusNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading discord channel %s: %w", ch, err)
		}
		for _, m := range page { // newest first
			if hm, ok := a.historyMessage(ch, m); ok && len(out) < n {
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
func (a *Adapter) message(ctx context.Context, ch, id string) (*discordgo.Message, error) {
	var m *discordgo.Message
	err := a.rest(ctx, func(opts ...discordgo.RequestOption) error {
		var err error
		m, err = a.session.ChannelMessage(ch, id, opts...)
		return err
	})
	return m, err
}

// historyMessage reads a message by the rules toMessage applies to
// events; ok is false for system messages (joins, pins, a thread's starter
// notice).
func (a *Adapter) historyMessage(ch string, m *discordgo.Message) (platform.HistoryMessage, bool) {
	if m == nil || m.Author == nil || (m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply) {
		return platform.HistoryMessage{}, false
	}
	self := a.self()
	text, mentioned := stripMention(m.Content, self)
	for _, u := range m.Mentions {
		if u != nil && u.ID == self {
			mentioned = true
		}
	}
	if role := a.ownRoleMentioned(m.GuildID, m.MentionRoles); role != "" {
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

// MaxFileSize is what Discord takes in a server without boosts.
func (a *Adapter) MaxFileSize(platform.Target) int64 { return UploadLimit }

// SendFile posts f as a message with an attachment, in the conversation's
// thread (opening a planned one), the comment as its content when it fits
// in one message, else the comment's parts first. Nobody is mentioned.
func (a *Adapter) SendFile(ctx context.Context, to platform.Target, f platform.OutgoingFile) (platform.Target, error) {
	name := path.Base(strings.ReplaceAll(f.Name, "\\", "/"))
	if name == "" || name == "." || name == "/" {
		return platform.Target{}, errors.New("discord send file: the file has no name")
	}
	if len(f.Data) > UploadLimit {
		return platform.Target{}, fmt.Errorf("discord send file %s: %w", name, &platform.FileTooLargeError{Size: int64(len(f.Data)), Limit: UploadLimit})
	}
	ch, err := a.postChannel(ctx, to)
	if err != nil {
		return platform.Target{}, err
	}
	content := ""
	if strings.TrimSpace(f.Comment) != "" {
		parts := splitForDiscord(discordMarkdown(f.Comment))
		if len(parts) == 1 {
			content = parts[0]
		} else if _, err := a.Send(ctx, to, f.Comment); err != nil {
			return platform.Target{}, fmt.Errorf("posting the comment of %s: %w", name, err)
		}
	}
	var m *discordgo.Message
	err = a.rest(ctx, func(opts ...discordgo.RequestOption) error {
		var err error
		m, err = a.session.ChannelMessageSendComplex(ch, &discordgo.MessageSend{
			Content:         content,
			Files:           []*discordgo.File{{Name: name, ContentType: f.Mime, Reader: bytes.NewReader(f.Data)}},
			AllowedMentions: noMentions(),
		}, opts...)
		return err
	})
	if isStatus(err, http.StatusRequestEntityTooLarge) {
		return platform.Target{}, fmt.Errorf("discord send file %s to %s: %w (%w)", name, ch,
			&platform.FileTooLargeError{Size: int64(len(f.Data)), Limit: UploadLimit}, err)
	}
	if err != nil {
		return platform.Target{}, fmt.Errorf("discord send file %s to %s: %w", name, ch, err)
	}
	a.log.Info("Discord file sent", "channel", to.Channel, "thread", to.Thread, "file", name, "size", len(f.Data))
	return platform.Target{Platform: a.cfg.Name, Channel: to.Channel, Thread: to.Thread, MessageID: m.ID}, nil
}

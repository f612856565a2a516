package slack

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/slack-go/slack"

	"github.com/cc-connect/cc-connect/platform"
)

var _ platform.HistoryReader = (*Adapter)(nil)

const (
	// historyPage is how many messages one conversations.* call asks for:
	// Slack's own advice for paging (it allows up to 1,000 for replies).
	historyPage = 200
	// historyPages bounds the pages read for one thread, so a thread of
	// tens of thousands of replies costs a bounded number of calls; the
	// latest messages then come from the last page read.
	historyPages = 25
)

// History reads a conversation's earlier messages (platform.HistoryReader):
// a thread's with conversations.replies (the parent first, as Slack
// returns it), a DM's with conversations.history. The app needs the
// history scope of the conversation's kind (channels:history,
// groups:history, im:history, mpim:history); without it Slack answers
// missing_scope, which is returned.
func (a *Adapter) History(ctx context.Context, conv platform.Target, q platform.HistoryQuery) ([]platform.HistoryMessage, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	before := messageTS(q.Before)
	if conv.Thread != "" && before != "" && !tsBefore(conv.Thread, before) {
		return nil, nil // the thread starts with the message itself
	}
	// Whether a message mentions the bot or is its own depends on who
	// the bot is. After a restart, recovery reads a thread's root before
	// Run has identified the bot: read without the identity, the root
	// would not mention the bot, and the thread would be taken as not the
	// bot's (its replies dropped).
	botUser, botID, err := a.knownIdentity(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading slack history of %s: %w", conv.Channel, err)
	}
	id := botIdentity{user: botUser, bot: botID}
	if conv.Thread == "" {
		return a.channelHistory(ctx, id, conv.Channel, before, q.Limit)
	}
	return a.threadHistory(ctx, id, conv.Channel, conv.Thread, before, q.Limit)
}

// botIdentity is the bot's own user and bot ids.
type botIdentity struct{ user, bot string }

// threadHistory keeps the thread's parent and the latest limit-1 replies
// before before, reading the pages oldest first.
func (a *Adapter) threadHistory(ctx context.Context, id botIdentity, channel, thread, before string, limit int) ([]platform.HistoryMessage, error) {
	var root *platform.HistoryMessage
	var latest []platform.HistoryMessage
	params := &slack.GetConversationRepliesParameters{ChannelID: channel, Timestamp: thread, Latest: before, Limit: historyPage}
	for range historyPages {
		var msgs []slack.Message
		var more bool
		var next string
		err := a.call(ctx, "conversations.replies", true, func(ctx context.Context) error {
			var err error
			msgs, more, next, err = a.api.GetConversationRepliesContext(ctx, params)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("reading slack thread %s in %s: %w", thread, channel, err)
		}
		for _, m := range msgs {
			hm, ok := a.historyMessage(ctx, id, channel, m)
			switch {
			case !ok:
			case m.Timestamp == thread:
				hm.Root = true
				root = &hm
			default:
				latest = append(latest, hm)
				if len(latest) > limit {
					latest = latest[1:]
				}
			}
		}
		if !more || next == "" {
			break
		}
		params.Cursor = next
	}
	return withRoot(root, latest, limit), nil
}

// withRoot is the root (when there is one) followed by the latest messages,
// limit in all.
func withRoot(root *platform.HistoryMessage, latest []platform.HistoryMessage, limit int) []platform.HistoryMessage {
	if root == nil {
		return latest[max(0, len(latest)-limit):]
	}
	keep := latest[max(0, len(latest)-(limit-1)):]
	return append([]platform.HistoryMessage{*root}, keep...)
}

// channelHistory reads the latest top-level messages of a conversation
// without threads (a DM), newest first from Slack, returned oldest first.
func (a *Adapter) channelHistory(ctx context.Context, id botIdentity, channel, before string, limit int) ([]platform.HistoryMessage, error) {
	var out []platform.HistoryMessage
	params := &slack.GetConversationHistoryParameters{ChannelID: channel, Latest: before, Limit: min(limit, historyPage)}
	for range historyPages {
		var resp *slack.GetConversationHistoryResponse
		err := a.call(ctx, "conversations.history", true, func(ctx context.Context) error {
			var err error
			resp, err = a.api.GetConversationHistoryContext(ctx, params)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("reading slack conversation %s: %w", channel, err)
		}
		for _, m := range resp.Messages {
			if hm, ok := a.historyMessage(ctx, id, channel, m); ok && len(out) < limit {
				out = append(out, hm)
			}
		}
		if len(out) >= limit || !resp.HasMore || resp.ResponseMetaData.NextCursor == "" {
			break
		}
		params.Cursor = resp.ResponseMetaData.NextCursor
	}
	slices.Reverse(out)
	return out, nil
}

// historyMessage reads one message of a conversation, by the rules
// toMessage applies to events; ok is false for what is no one's post
// (joins, edits, deletions).
func (a *Adapter) historyMessage(ctx context.Context, id botIdentity, channel string, m slack.Message) (platform.HistoryMessage, bool) {
	botUser, botID := id.user, id.bot
	isBot := m.BotID != "" || m.SubType == "bot_message"
	if !userSubtype(m.SubType) && m.SubType != "bot_message" {
		return platform.HistoryMessage{}, false
	}
	if m.Timestamp == "" || (m.User == "" && !isBot) {
		return platform.HistoryMessage{}, false
	}
	self := (botUser != "" && m.User == botUser) || (botID != "" && m.BotID == botID)
	hm := platform.HistoryMessage{
		ID:        channel + ":" + m.Timestamp,
		MessageID: m.Timestamp,
		UserID:    m.User,
		Text:      plainText(m.Text, botUser),
		Time:      tsTime(m.Timestamp),
		Seq:       tsSeq(m.Timestamp),
		IsBot:     isBot || self,
		FromSelf:  self,
		Mentioned: botUser != "" && (strings.Contains(m.Text, "<@"+botUser+">") || strings.Contains(m.Text, "<@"+botUser+"|")),
	}
	switch {
	case self:
		hm.UserName = "cc-connect"
	case m.User != "":
		hm.UserName = a.userName(ctx, m.User)
	default:
		hm.UserID, hm.UserName = m.BotID, m.Username
	}
	for _, f := range m.Files {
		hm.Files = append(hm.Files, orDefault(f.Name, orDefault(f.Title, f.ID)))
	}
	return hm, true
}

// tsBefore orders two Slack timestamps by time.
func tsBefore(a, b string) bool {
	ta, tb := tsTime(a), tsTime(b)
	return ta.Before(tb)
}

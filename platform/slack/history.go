package slack

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/cc-connect/cc-connect/platform"
)

// reads is what the adapter reads of Slack besides events: users' display
// names (cached), a conversation's earlier messages, and a reply's parts
// looked for after a restart (reply.go). It posts nothing.
type reads struct {
	wire  *wire
	self  *botSelf
	users *userCache
	log   *slog.Logger
}

const (
	// historyPage is how many messages one conversations.* call asks for:
	// Slack's own advice for paging (it allows up to 1,000 for replies).
	historyPage = 200
	// historyPages bounds the pages read for one thread, so a thread of
	// tens of thousands of replies costs a bounded number of calls; the
	// latest messages then come from the last page read.
	historyPages = 25
)

// history reads a conversation's earlier messages: a thread's with
// conversations.replies, a DM's with conversations.history.
func (r *reads) history(ctx context.Context, conv platform.Target, q platform.HistoryQuery) ([]platform.HistoryMessage, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	// Whether a message mentions the bot or is its own depends on who
	// the bot is. After a restart, recovery reads a thread's root before
	// Run has identified the bot: read without the identity, the root
	// would not mention the bot, and the thread would be taken as not the
	// bot's (its replies dropped).
	if _, _, err := r.self.known(ctx); err != nil {
		return nil, fmt.Errorf("reading slack history of %s: %w", conv.Channel, err)
	}
	before := messageTS(q.Before)
	if conv.Thread == "" {
		return r.channelHistory(ctx, conv.Channel, before, q.Limit)
	}
	if before != "" && !tsBefore(conv.Thread, before) {
		return nil, nil // the thread starts with the message itself
	}
	return r.threadHistory(ctx, conv.Channel, conv.Thread, before, q.Limit)
}

// threadHistory keeps the thread's parent and the latest limit-1 replies
// before before, reading the pages oldest first.
func (r *reads) threadHistory(ctx context.Context, channel, thread, before string, limit int) ([]platform.HistoryMessage, error) {
	var root *platform.HistoryMessage
	var latest []platform.HistoryMessage
	params := &slack.GetConversationRepliesParameters{ChannelID: channel, Timestamp: thread, Latest: before, Limit: historyPage}
	for range historyPages {
		var msgs []slack.Message
		var more bool
		var next string
		err := r.wire.call(ctx, "conversations.replies", true, func(ctx context.Context) error {
			var err error
			msgs, more, next, err = r.wire.api.GetConversationRepliesContext(ctx, params)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("reading slack thread %s in %s: %w", thread, channel, err)
		}
		for _, m := range msgs {
			hm, ok := r.historyMessage(ctx, channel, m)
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
func (r *reads) channelHistory(ctx context.Context, channel, before string, limit int) ([]platform.HistoryMessage, error) {
	var out []platform.HistoryMessage
	params := &slack.GetConversationHistoryParameters{ChannelID: channel, Latest: before, Limit: min(limit, historyPage)}
	for range historyPages {
		var resp *slack.GetConversationHistoryResponse
		err := r.wire.call(ctx, "conversations.history", true, func(ctx context.Context) error {
			var err error
			resp, err = r.wire.api.GetConversationHistoryContext(ctx, params)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("reading slack conversation %s: %w", channel, err)
		}
		for _, m := range resp.Messages {
			if hm, ok := r.historyMessage(ctx, channel, m); ok && len(out) < limit {
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
func (r *reads) historyMessage(ctx context.Context, channel string, m slack.Message) (platform.HistoryMessage, bool) {
	botUser, botID := r.self.ids()
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
		hm.UserName = r.userName(ctx, m.User)
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

// userName returns a display name for a user, from a cache of users.info
// (an hour; a failure is remembered five minutes, so that a missing
// users:read scope costs one lookup per user now and then). A failed
// lookup leaves the name empty.
func (r *reads) userName(ctx context.Context, userID string) string {
	if name, ok := r.users.get(userID); ok {
		return name
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var u *slack.User
	err := r.wire.call(ctx, "users.info", true, func(ctx context.Context) error {
		var err error
		u, err = r.wire.api.GetUserInfoContext(ctx, userID)
		return err
	})
	if err != nil {
		r.log.Debug("Looking up Slack user failed", "user_id", userID, "error", err)
		r.users.put(userID, "", 5*time.Minute)
		return ""
	}
	name := u.Profile.DisplayName
	if name == "" {
		name = u.RealName
	}
	if name == "" {
		name = u.Name
	}
	r.users.put(userID, name, time.Hour)
	return name
}

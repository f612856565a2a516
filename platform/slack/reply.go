package slack

import (
	"context"
	"fmt"
	"strings"

	"github.com/slack-go/slack"

	"github.com/cc-connect/cc-connect/platform"
)

// A reply posted so that a restart does not post it twice: every part
// carries message metadata naming the reply's key and the part, and a
// reply that may have been posted before a restart is looked for first
// (conversations.replies, or conversations.history in a DM, read with
// include_all_metadata: Slack leaves metadata out otherwise).

// replyEventType is the metadata event type of cc-connect's replies.
const replyEventType = "cc_connect_reply"

// maxLookupPages bounds how much of a conversation a lookup reads: a
// reply is looked for after the message it answers, so it is near.
const maxLookupPages = 10

// lookupPage is how many messages one lookup call asks for (Slack
// recommends no more than 200).
const lookupPage = 200

var _ platform.Replier = (*Adapter)(nil)

// SendReply posts text as Send does, each part tagged with r.Key (see
// platform.Replier). With r.Again it first reads the conversation after
// r.After for parts of the same key; when that read fails, it posts the
// parts r.Done does not name, as a platform without lookup would.
func (a *Adapter) SendReply(ctx context.Context, to platform.Target, text string, r platform.Reply) (platform.ReplyResult, error) {
	res := platform.ReplyResult{Last: platform.Target{Platform: a.cfg.Name, Channel: to.Channel, Thread: to.Thread}}
	if strings.TrimSpace(text) == "" {
		return res, fmt.Errorf("sending to slack channel %s: %w", to.Channel, ErrEmptyMessage)
	}
	parts := splitMrkdwn(text, MessageLimit)
	res.Parts = len(parts)
	var found map[int]string
	if r.Again && r.Key != "" {
		var err error
		if found, err = a.findReply(ctx, to, r.Key, r.After); err != nil {
			a.log.Warn("Looking for a reply posted before the restart failed; posting it", "channel", to.Channel, "thread", to.Thread, "error", err)
		}
	}
	for i, part := range parts {
		if ts, ok := found[i]; ok {
			res.Found++
			res.Last.MessageID = ts
			continue
		}
		if r.Done != nil && r.Done(i) {
			continue
		}
		opts := []slack.MsgOption{slack.MsgOptionText(part, false)}
		if r.Key != "" {
			opts = append(opts, slack.MsgOptionMetadata(slack.SlackMetadata{EventType: replyEventType,
				EventPayload: map[string]any{"key": r.Key, "part": i, "parts": len(parts)}}))
		}
		ts, err := a.post(ctx, to, opts...)
		if err != nil {
			return res, fmt.Errorf("sending part %d of %d to slack channel %s: %w", i+1, len(parts), to.Channel, err)
		}
		res.Posted++
		res.Last.MessageID = ts
		if r.Landed != nil {
			r.Landed(i, len(parts))
		}
	}
	return res, nil
}

// findReply returns the ts of each part of the reply key that the bot
// posted in to (its thread, or the channel's top level when to has no
// thread) after the message at after.
func (a *Adapter) findReply(ctx context.Context, to platform.Target, key, after string) (map[int]string, error) {
	botUser, botID, err := a.knownIdentity(ctx)
	if err != nil {
		return nil, fmt.Errorf("looking for reply %s in slack channel %s: %w", key, to.Channel, err)
	}
	found := map[int]string{}
	cursor := ""
	for range maxLookupPages {
		var (
			msgs []slack.Message
			next string
		)
		err := a.call(ctx, lookupMethod(to), true, func(ctx context.Context) error {
			var err error
			msgs, next, err = a.readConversation(ctx, to, messageTS(after), cursor)
			return err
		})
		if err != nil {
			return found, fmt.Errorf("looking for reply %s in slack channel %s: %w", key, to.Channel, err)
		}
		for _, m := range msgs {
			md := m.Metadata
			mine := (botID != "" && m.BotID == botID) || (botUser != "" && m.User == botUser)
			if !mine || md.EventType != replyEventType || md.EventPayload["key"] != key {
				continue
			}
			if part, ok := md.EventPayload["part"].(float64); ok && part >= 0 {
				found[int(part)] = m.Timestamp
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	return found, nil
}

// knownIdentity returns the bot's user and bot ids, asking Slack
// (auth.test) when Run has not learnt them yet: after a restart, recovery
// may post a reply before the adapter has connected.
func (a *Adapter) knownIdentity(ctx context.Context) (userID, botID string, err error) {
	if u, b := a.identity(); u != "" || b != "" {
		return u, b, nil
	}
	var resp *slack.AuthTestResponse
	err = a.call(ctx, "auth.test", true, func(ctx context.Context) error {
		var err error
		resp, err = a.api.AuthTestContext(ctx)
		return err
	})
	if err != nil {
		return "", "", fmt.Errorf("identifying the bot: %w", err)
	}
	a.mu.Lock()
	if a.botUserID == "" && a.botID == "" {
		a.botUserID, a.botID = resp.UserID, resp.BotID
	}
	a.mu.Unlock()
	return resp.UserID, resp.BotID, nil
}

func lookupMethod(to platform.Target) string {
	if to.Thread != "" {
		return "conversations.replies"
	}
	return "conversations.history"
}

// readConversation reads one page of to's thread (or, without a thread,
// its channel's top level) after the message at oldest, with metadata.
func (a *Adapter) readConversation(ctx context.Context, to platform.Target, oldest, cursor string) ([]slack.Message, string, error) {
	if to.Thread != "" {
		msgs, _, next, err := a.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
			ChannelID: to.Channel, Timestamp: to.Thread, Oldest: oldest, Cursor: cursor, Limit: lookupPage, IncludeAllMetadata: true})
		return msgs, next, err
	}
	h, err := a.api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
		ChannelID: to.Channel, Oldest: oldest, Cursor: cursor, Limit: lookupPage, IncludeAllMetadata: true})
	if err != nil {
		return nil, "", err
	}
	return h.Messages, h.ResponseMetaData.NextCursor, nil
}

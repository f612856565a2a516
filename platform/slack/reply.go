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
	for i := range parts {
		if ts, ok := found[i]; ok {
			res.Found++
			res.Last.MessageID = ts
			continue
		}
		if r.Done != nil && r.Done(i) {
			continue
		}
		ts, err := a.postPart(ctx, to, parts, i, r)
		if err != nil {
			return res, err
		}
		res.Posted++
		res.Last.MessageID = ts
	}
	return res, nil
}

// postPart posts part i of a reply, tagged with r.Key, and tells r.Landed.
func (a *Adapter) postPart(ctx context.Context, to platform.Target, parts []string, i int, r platform.Reply) (string, error) {
	opts := []slack.MsgOption{slack.MsgOptionText(parts[i], false)}
	if r.Key != "" {
		opts = append(opts, replyMetadata(r.Key, i, len(parts)))
	}
	ts, err := a.post(ctx, to, opts...)
	if err != nil {
		return "", fmt.Errorf("sending part %d of %d to slack channel %s: %w", i+1, len(parts), to.Channel, err)
	}
	a.shown.Put(to.Channel+":"+ts, parts[i])
	if r.Landed != nil {
		r.Landed(i, len(parts))
	}
	return ts, nil
}

func replyMetadata(key string, part, parts int) slack.MsgOption {
	return slack.MsgOptionMetadata(slack.SlackMetadata{EventType: replyEventType,
		EventPayload: map[string]any{"key": key, "part": part, "parts": parts}})
}

var _ platform.ReplyFinisher = (*Adapter)(nil)

// FinishReply turns a streamed reply into the reply (platform.ReplyFinisher):
// each message of msgs gets its part through chat.update with the reply's
// metadata, booked ahead of the stream's own edits (editPacer.ReserveFirst:
// only the workspace's budget can make it wait), and the parts beyond msgs
// are posted tagged, as SendReply posts them. With r.Again the thread is read
// first: a part found tagged is edited again where msgs has no message for
// it, and not posted a second time.
func (a *Adapter) FinishReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string, r platform.Reply) ([]platform.Target, error) {
	if strings.TrimSpace(text) == "" {
		return msgs, fmt.Errorf("finishing a reply in slack channel %s: %w", to.Channel, ErrEmptyMessage)
	}
	parts := splitMrkdwn(text, MessageLimit)
	var found map[int]string
	if r.Again && r.Key != "" {
		var err error
		if found, err = a.findReply(ctx, to, r.Key, r.After); err != nil {
			a.log.Warn("Looking for a reply finished before the restart failed; finishing it", "channel", to.Channel, "thread", to.Thread, "error", err)
		}
	}
	out := make([]platform.Target, 0, len(parts))
	for i, part := range parts {
		m, ok := platform.Target{}, false
		switch ts, tagged := found[i]; {
		case i < len(msgs):
			m, ok = msgs[i], true
		case tagged:
			m, ok = platform.Target{Platform: a.cfg.Name, Channel: to.Channel, Thread: to.Thread, MessageID: ts}, true
		}
		if !ok {
			if r.Done != nil && r.Done(i) {
				continue
			}
			ts, err := a.postPart(ctx, to, parts, i, r)
			if err != nil {
				return out, err
			}
			out = append(out, platform.Target{Platform: a.cfg.Name, Channel: to.Channel, Thread: to.Thread, MessageID: ts})
			continue
		}
		opts := []slack.MsgOption{slack.MsgOptionText(part, false)}
		if r.Key != "" {
			opts = append(opts, replyMetadata(r.Key, i, len(parts)))
		}
		if err := a.updateFirst(ctx, m, part, opts...); err != nil {
			return out, err
		}
		a.shown.Put(m.Channel+":"+messageTS(m.MessageID), part)
		out = append(out, m)
	}
	return out, nil
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

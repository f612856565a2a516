package slack

import (
	"context"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/replykit"
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

var (
	_ replykit.Wire   = replyWire{}
	_ replykit.Finder = replyWire{}
)

// replyWire is what the reply kit needs of Slack: mrkdwn parts under
// MessageLimit, chat.postMessage and chat.update with the reply's
// metadata, and the lookup of tagged parts.
type replyWire struct {
	w     *wire
	reads *reads
}

func (w replyWire) Split(text string) []string { return splitMrkdwn(text, MessageLimit) }

func (w replyWire) Post(ctx context.Context, to platform.Target, p replykit.Part) (platform.Target, error) {
	ts, err := w.w.post(ctx, to, partOptions(p)...)
	return platform.Target{Platform: w.w.name, Channel: to.Channel, Thread: to.Thread, MessageID: ts}, err
}

// Edit updates msg through the edit throttle; a final edit is booked
// ahead of the stream's (updateFirst) and carries the reply's metadata.
func (w replyWire) Edit(ctx context.Context, msg platform.Target, p replykit.Part, final bool) error {
	if final {
		return w.w.updateFirst(ctx, msg, p.Text, partOptions(p)...)
	}
	return w.w.update(ctx, msg, p.Text, slack.MsgOptionText(p.Text, false))
}

func (w replyWire) ShownKey(msg platform.Target) string {
	return msg.Channel + ":" + messageTS(msg.MessageID)
}

func (w replyWire) FindReply(ctx context.Context, to platform.Target, key, after string) (map[int]string, error) {
	return w.reads.findReply(ctx, to, key, after)
}

// partOptions is a part's text, with the reply's metadata when it has a
// key.
func partOptions(p replykit.Part) []slack.MsgOption {
	opts := []slack.MsgOption{slack.MsgOptionText(p.Text, false)}
	if p.Key != "" {
		opts = append(opts, slack.MsgOptionMetadata(slack.SlackMetadata{EventType: replyEventType,
			EventPayload: map[string]any{"key": p.Key, "part": p.Index, "parts": p.Of}}))
	}
	return opts
}

// findReply returns the ts of each part of the reply key that the bot
// posted in to (its thread, or the channel's top level when to has no
// thread) after the message at after.
func (r *reads) findReply(ctx context.Context, to platform.Target, key, after string) (map[int]string, error) {
	botUser, botID, err := r.self.known(ctx)
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
		err := r.wire.call(ctx, lookupMethod(to), true, func(ctx context.Context) error {
			var err error
			msgs, next, err = r.readConversation(ctx, to, messageTS(after), cursor)
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

func lookupMethod(to platform.Target) string {
	if to.Thread != "" {
		return "conversations.replies"
	}
	return "conversations.history"
}

// readConversation reads one page of to's thread (or, without a thread,
// its channel's top level) after the message at oldest, with metadata.
func (r *reads) readConversation(ctx context.Context, to platform.Target, oldest, cursor string) ([]slack.Message, string, error) {
	if to.Thread != "" {
		msgs, _, next, err := r.wire.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
			ChannelID: to.Channel, Timestamp: to.Thread, Oldest: oldest, Cursor: cursor, Limit: lookupPage, IncludeAllMetadata: true})
		return msgs, next, err
	}
	h, err := r.wire.api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
		ChannelID: to.Channel, Oldest: oldest, Cursor: cursor, Limit: lookupPage, IncludeAllMetadata: true})
	if err != nil {
		return nil, "", err
	}
	return h.Messages, h.ResponseMetaData.NextCursor, nil
}

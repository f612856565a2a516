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
	_ platform.Replier       = (*Adapter)(nil)
	_ platform.ReplyFinisher = (*Adapter)(nil)
	_ replykit.Wire          = replyWire{}
	_ replykit.Finder        = replyWire{}
)

// SendReply posts text as Send does, each part tagged with r.Key (see
// platform.Replier). With r.Again it first reads the conversation after
// r.After for parts of the same key; when that read fails, it posts the
// parts r.Done does not name, as a platform without lookup would.
func (a *Adapter) SendReply(ctx context.Context, to platform.Target, text string, r platform.Reply) (platform.ReplyResult, error) {
	return a.replies.SendReply(ctx, to, text, r)
}

// FinishReply turns a streamed reply into the reply (platform.ReplyFinisher):
// each message of msgs gets its part through chat.update with the reply's
// metadata, booked ahead of the stream's own edits (editPacer.ReserveFirst:
// only the workspace's budget can make it wait), and the parts beyond msgs
// are posted tagged, as SendReply posts them. With r.Again the thread is read
// first: a part found tagged is edited again where msgs has no message for
// it, and not posted a second time.
func (a *Adapter) FinishReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string, r platform.Reply) ([]platform.Target, error) {
	return a.replies.FinishReply(ctx, to, msgs, text, r)
}

// replyWire is what the reply kit needs of Slack: mrkdwn parts under
// MessageLimit, chat.postMessage and chat.update with the reply's
// metadata, and the lookup of tagged parts.
type replyWire struct{ a *Adapter }

func (w replyWire) Split(text string) []string { return splitMrkdwn(text, MessageLimit) }

func (w replyWire) Post(ctx context.Context, to platform.Target, p replykit.Part) (platform.Target, error) {
	ts, err := w.a.post(ctx, to, partOptions(p)...)
	return platform.Target{Platform: w.a.cfg.Name, Channel: to.Channel, Thread: to.Thread, MessageID: ts}, err
}

// Edit updates msg through the edit throttle; a final edit is booked
// ahead of the stream's (updateFirst) and carries the reply's metadata.
func (w replyWire) Edit(ctx context.Context, msg platform.Target, p replykit.Part, final bool) error {
	if final {
		return w.a.updateFirst(ctx, msg, p.Text, partOptions(p)...)
	}
	return w.a.update(ctx, msg, p.Text, slack.MsgOptionText(p.Text, false))
}

func (w replyWire) ShownKey(msg platform.Target) string {
	return msg.Channel + ":" + messageTS(msg.MessageID)
}

func (w replyWire) FindReply(ctx context.Context, to platform.Target, key, after string) (map[int]string, error) {
	return w.a.findReply(ctx, to, key, after)
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

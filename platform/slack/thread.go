package slack

import (
	"context"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/cc-connect/cc-connect/platform"
)

// Reading a thread back (platform.ThreadReader) with conversations.replies,
// which Slack rates at Tier 3 for internal apps (50+ a minute) and which
// needs the history scopes the bot already has for its message events.

var _ platform.ThreadReader = (*Adapter)(nil)

// maxThreadPages bounds how much of a long thread ReadThread pages through
// for its latest replies.
const maxThreadPages = 25

// ReadThread returns the root of thread (its Thread is the root's ts) and
// the latest replies that fit in limit, oldest first. A root Slack does not
// know is platform.ErrNoThread.
func (a *Adapter) ReadThread(ctx context.Context, thread platform.Target, limit int) ([]platform.Message, error) {
	if thread.Channel == "" || thread.Thread == "" {
		return nil, fmt.Errorf("reading a slack thread: %w: no channel or thread named", platform.ErrNoThread)
	}
	limit = max(limit, 1)
	var (
		root    *slack.Message
		replies []slack.Message // the latest limit-1, oldest first
		cursor  string
	)
	for page := 0; page < maxThreadPages; page++ {
		var (
			msgs []slack.Message
			next string
		)
		err := a.call(ctx, "conversations.replies", true, func(ctx context.Context) error {
			var err error
			// The root comes first on the first page: one message is
			// all a root check needs.
			msgs, _, next, err = a.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
				ChannelID: thread.Channel, Timestamp: thread.Thread, Cursor: cursor, Limit: min(limit, lookupPage)})
			return err
		})
		if isSlackError(err, "thread_not_found") || isSlackError(err, "message_not_found") {
			return nil, fmt.Errorf("reading slack thread %s in %s: %w", thread.Thread, thread.Channel, platform.ErrNoThread)
		}
		if err != nil {
			return nil, fmt.Errorf("reading slack thread %s in %s: %w", thread.Thread, thread.Channel, err)
		}
		for i := range msgs {
			switch {
			case msgs[i].Timestamp == thread.Thread:
				root = &msgs[i]
			case limit > 1:
				replies = append(replies, msgs[i])
				if len(replies) > limit-1 {
					replies = replies[1:]
				}
			}
		}
		if next == "" || (limit == 1 && root != nil) {
			break
		}
		cursor = next
	}
	if root == nil {
		return nil, fmt.Errorf("reading slack thread %s in %s: %w: its root was not returned", thread.Thread, thread.Channel, platform.ErrNoThread)
	}
	out := make([]platform.Message, 0, 1+len(replies))
	for _, m := range append([]slack.Message{*root}, replies...) {
		out = append(out, a.fromHistory(ctx, thread.Channel, m.Msg))
	}
	return out, nil
}

// fromHistory normalizes a message read back from Slack as an event of it
// would be, naming its author from the users.info cache.
func (a *Adapter) fromHistory(ctx context.Context, channel string, m slack.Msg) platform.Message {
	ev := eventOf(m)
	if ev.Channel == "" {
		ev.Channel = channel
	}
	if ev.Type == "" {
		ev.Type = "message"
	}
	msg := a.normalize(ev)
	botUser, botID := a.identity()
	msg.IsBot = ev.BotID != "" || (botUser != "" && ev.User == botUser) || (botID != "" && ev.BotID == botID)
	if !msg.IsBot && ev.User != "" {
		msg.UserName = a.userName(ctx, ev.User)
	}
	return msg
}

// eventOf is a slack-go message as the adapter's event struct, so that one
// set of rules judges events and messages read back alike.
func eventOf(m slack.Msg) inEvent {
	ev := inEvent{
		Type:         m.Type,
		Subtype:      m.SubType,
		Channel:      m.Channel,
		User:         m.User,
		BotID:        m.BotID,
		Text:         m.Text,
		TS:           m.Timestamp,
		ThreadTS:     m.ThreadTimestamp,
		ParentUserID: m.ParentUserId,
		Hidden:       m.Hidden,
	}
	for _, f := range m.Files {
		ev.Files = append(ev.Files, inFile{ID: f.ID, Name: f.Name, Title: f.Title, Mimetype: f.Mimetype, Size: int64(f.Size),
			Mode: f.Mode, URLPrivate: f.URLPrivate, URLPrivateDownload: f.URLPrivateDownload})
	}
	return ev
}

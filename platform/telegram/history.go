package telegram

import (
	"context"
	"strconv"
	"time"

	"github.com/cc-connect/cc-connect/platform"
)

var _ platform.HistoryReader = (*Adapter)(nil)

// What the adapter remembers of each chat and forum topic, for History.
const (
	historyConversations = 1024
	historyPerChat       = 200
)

// History returns a chat's (or forum topic's) earlier messages as the bot
// saw them (platform.HistoryReader). The Bot API has no way to read a
// chat's history, so this is what reached the bot since the adapter
// started (with privacy mode on, in groups only commands, mentions and
// replies to the bot) and what the bot posted, the latest 200 of each
// chat; it is empty after a restart. Nothing in a Telegram chat is a
// thread's root.
func (a *Adapter) History(_ context.Context, conv platform.Target, q platform.HistoryQuery) ([]platform.HistoryMessage, error) {
	q.Before = bareMessageID(q.Before)
	return a.history.History(conv, q), nil
}

// noteSeen remembers a message that reached the bot.
func (a *Adapter) noteSeen(m platform.Message) {
	hm := platform.HistoryMessage{
		ID: m.ID, MessageID: m.Target.MessageID, UserID: m.UserID, UserName: m.UserName,
		Text: m.Text, Time: m.Received, IsBot: m.IsBot, Mentioned: m.Mentioned,
	}
	for _, at := range m.Attachments {
		hm.Files = append(hm.Files, at.Name)
	}
	a.history.AddOnce(m.Target, hm)
}

var _ platform.SeenNoter = (*Adapter)(nil)

// NoteSeen remembers a message another host received (in a cluster, the
// poller), for History; one seen already is not noted twice.
func (a *Adapter) NoteSeen(m platform.Message) { a.noteSeen(m) }

// noteSent remembers a message the bot posted.
func (a *Adapter) noteSent(to platform.Target, id int, text string, files ...string) {
	self := a.botUser()
	a.history.Add(to, platform.HistoryMessage{
		ID: to.Channel + ":" + strconv.Itoa(id), MessageID: strconv.Itoa(id),
		UserID: strconv.FormatInt(self.ID, 10), UserName: self.UserName,
		Text: text, Files: files, Time: time.Now(), IsBot: true, FromSelf: true,
	})
}

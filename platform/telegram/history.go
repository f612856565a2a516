package telegram

import (
	"strconv"
	"time"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/seenlog"
)

// What the adapter remembers of each chat and forum topic, for History.
const (
	historyConversations = 1024
	historyPerChat       = 200
)

// seen is what the bot saw and posted, by conversation: Telegram's Bot
// API has no history to read, so History answers from it.
type seen struct {
	self *botSelf
	log  *seenlog.Log
}

// history returns what the bot saw and posted in conv that q selects.
func (s *seen) history(conv platform.Target, q platform.HistoryQuery) []platform.HistoryMessage {
	q.Before = bareMessageID(q.Before)
	return s.log.History(conv, q)
}

// noteSeen remembers a message that reached the bot.
func (s *seen) noteSeen(m platform.Message) {
	hm := platform.HistoryMessage{
		ID: m.ID, MessageID: m.Target.MessageID, UserID: m.UserID, UserName: m.UserName,
		Text: m.Text, Time: m.Received, IsBot: m.IsBot, Mentioned: m.Mentioned,
	}
	for _, at := range m.Attachments {
		hm.Files = append(hm.Files, at.Name)
	}
	s.log.AddOnce(m.Target, hm)
}

// noteSent remembers a message the bot posted.
func (s *seen) noteSent(to platform.Target, id int, text string, files ...string) {
	self := s.self.get()
	s.log.Add(to, platform.HistoryMessage{
		ID: to.Channel + ":" + strconv.Itoa(id), MessageID: strconv.Itoa(id),
		UserID: strconv.FormatInt(self.ID, 10), UserName: self.UserName,
		Text: text, Files: files, Time: time.Now(), IsBot: true, FromSelf: true,
	})
}

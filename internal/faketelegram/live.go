package faketelegram

import (
	"net/url"
	"strconv"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakekit"
)

// What a reply streamed into a chat needs of the fake: a standing limit on
// edits per chat, as Telegram's flood control holds a bot to about one
// message a second in a private chat and twenty a minute in a group, and
// deleteMessage.

// editPace is the standing limit: the least time between two edits in one
// chat, by kind of chat, kept as a window of one edit per chat.
type editPace struct {
	private, group time.Duration
	chats          map[int64]*fakekit.Window
}

// SetEditLimit holds editMessageText to one edit per private every
// private chat and per group every group or supergroup: an edit sooner is
// refused with HTTP 429 "Too Many Requests: retry after N" and
// parameters.retry_after (whole seconds, at least 1, as Telegram sends
// them) and changes nothing. Zero durations lift the limit.
func (s *Server) SetEditLimit(private, group time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pace = &editPace{private: private, group: group, chats: map[int64]*fakekit.Window{}}
}

// FloodRefused returns how many calls of method the standing limit refused.
func (s *Server) FloodRefused(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused[method]
}

// paceLocked spends the chat's edit, or gives Telegram's refusal.
func (s *Server) paceLocked(method string, form url.Values) (Answer, bool) {
	if s.pace == nil || method != "editMessageText" {
		return Answer{}, false
	}
	chat, ok := s.chatLocked(form)
	if !ok {
		return Answer{}, false
	}
	gap := s.pace.private
	if chat.Type != "private" {
		gap = s.pace.group
	}
	if gap <= 0 {
		return Answer{}, false
	}
	w := s.pace.chats[chat.ID]
	if w == nil {
		w = &fakekit.Window{N: 1, D: gap}
		s.pace.chats[chat.ID] = w
	}
	if wait, ok := w.Take(time.Now()); !ok {
		s.refused[method]++
		return floodWait(fakekit.RetrySeconds(wait)), true
	}
	return Answer{}, false
}

// deleteLocked is deleteMessage: the bot may delete its own messages.
func (s *Server) deleteLocked(form url.Values) Answer {
	chat, ok := s.chatLocked(form)
	if !ok {
		return badRequest("chat not found")
	}
	id, _ := strconv.Atoi(form.Get("message_id"))
	m, ok := s.lookupLocked(chat.ID, id)
	if !ok || m.Deleted {
		return badRequest("message to delete not found")
	}
	if !m.FromBot {
		return badRequest("message can't be deleted")
	}
	m.Deleted = true
	s.changedLocked(m)
	return okResult(true)
}

package faketelegram

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"time"
)

// What a reply streamed into a chat needs of the fake: a standing limit on
// edits per chat, as Telegram's flood control holds a bot to about one
// message a second in a private chat and twenty a minute in a group, and
// deleteMessage.

// editPace is the standing limit: the least time between two edits in one
// chat, by kind of chat.
type editPace struct {
	private, group time.Duration
	last           map[int64]time.Time
}

// SetEditLimit holds editMessageText to one edit per private every
// private chat and per group every group or supergroup: an edit sooner is
// refused with HTTP 429 "Too Many Requests: retry after N" and
// parameters.retry_after (whole seconds, at least 1, as Telegram sends
// them) and changes nothing. Zero durations lift the limit.
func (s *Server) SetEditLimit(private, group time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pace = &editPace{private: private, group: group, last: map[int64]time.Time{}}
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
	now := time.Now()
	if next := s.pace.last[chat.ID].Add(gap); now.Before(next) {
		retry := int(math.Max(1, math.Ceil(next.Sub(now).Seconds())))
		if s.refused == nil {
			s.refused = map[string]int{}
		}
		s.refused[method]++
		return Answer{Status: 429, Body: fmt.Sprintf(
			`{"ok":false,"error_code":429,"description":"Too Many Requests: retry after %d","parameters":{"retry_after":%d}}`, retry, retry)}, true
	}
	s.pace.last[chat.ID] = now
	return Answer{}, false
}

// deleteLocked is deleteMessage: the bot may delete its own messages.
func (s *Server) deleteLocked(form url.Values) Answer {
	chat, ok := s.chatLocked(form)
	if !ok {
		return badRequest("chat not found")
	}
	id, _ := strconv.Atoi(form.Get("message_id"))
	m, ok := s.msgs[msgKey(chat.ID, id)]
	if !ok || m.Deleted {
		return badRequest("message to delete not found")
	}
	if !m.FromBot {
		return badRequest("message can't be deleted")
	}
	m.Deleted = true
	s.notify()
	return okResult(true)
}

// SetWaitLimit sets how long the fake's waits (Wait and the waits built on
// it) last before they fail the test, instead of its default: tests that
// drive the real claude CLI, whose start alone takes seconds on a loaded
// machine, wait as long as the engine's own real-CLI tests do.
func (s *Server) SetWaitLimit(d time.Duration) { s.waitFor.Store(int64(d)) }

func (s *Server) waitLimit() time.Duration {
	if d := time.Duration(s.waitFor.Load()); d > 0 {
		return d
	}
	return waitLimit
}

// Package faketelegram is a fake Telegram Bot API for tests, served on
// 127.0.0.1: form-encoded POSTs to /bot<token>/<method> answered with
// {"ok":...} JSON, getUpdates as a long poll with offsets, sendMessage,
// editMessageText, setMessageReaction, sendChatAction, answerCallbackQuery,
// sendDocument and sendPhoto (multipart uploads), getFile and file
// downloads under /file/bot<token>/. It keeps the chats'
// messages, so a test can ask what the bot sent, edited and reacted to,
// and it holds the client to Telegram's real limits and error bodies: text
// over 4,096 characters after entity parsing is "Bad Request: message is
// too long", broken HTML is "Bad Request: can't parse entities: …", an
// edit that changes nothing is "message is not modified", callback_data
// over 64 bytes is BUTTON_DATA_INVALID, a document over 50 MB is 413
// Request Entity Too Large, a photo over 10 MB or out of proportion is
// PHOTO_SAVE_FILE_INVALID or PHOTO_INVALID_DIMENSIONS, a caption over 1,024
// characters is "message caption is too long", a reaction outside Telegram's set
// is REACTION_INVALID, flood control is HTTP 429 with
// parameters.retry_after, and a second concurrent getUpdates ends the first
// with 409 Conflict. It reads a message's text as Telegram does (Parse):
// what it shows, and whom it notifies (Message.Mentions).
//
// Tests wait on what the fake records (Next, WaitSent, WaitMessage, …),
// never on time. The fake is for tests only and imports nothing of
// cc-connect's but its test helpers (testenv, fakekit): its limits are
// Telegram's numbers, not the adapter's.
//
// The machinery under it (change notification and waits, the call log, the
// message store, overrides, rate limiters, id sequences) is
// internal/fakekit's, shared with the other fakes; this package keeps
// Telegram's wire protocol and rules.
package faketelegram

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakekit"
)

// The bot the fake serves.
const (
	Token       = "123456:TEST-secret-token"
	BotID       = 999
	BotUsername = "cc_bot"
)

// maxUnread is how many calls may wait unread by Next: more is a client in
// a retry loop.
const maxUnread = 10000

// Server is one fake Bot API.
type Server struct {
	tb  testing.TB
	srv *httptest.Server
	sig *fakekit.Signal // every change the fake records
	fed *fakekit.Signal // updates queued: what a long poll waits for

	calls     *fakekit.Log[Call] // every request, in order; Next reads it as a queue
	overrides fakekit.Overrides[Answer]
	msgIDs    fakekit.Seq
	updIDs    fakekit.Seq

	mu        sync.Mutex // guards everything below, and msgs
	msgs      *fakekit.Store[msgKey, Message]
	updates   []json.RawMessage // queued, not yet confirmed by an offset
	updateIDs []int
	chats     map[int64]Chat
	users     map[int64]bool    // the senders of messages delivered (Send)
	migrated  map[int64]int64   // group -> the supergroup it became
	files     map[string]File   // file_id -> file
	content   map[string]string // file_path -> content
	queries   map[string]*query
	polling   chan struct{}  // closed to end the running long poll with 409
	pace      *editPace      // SetEditLimit
	refused   map[string]int // calls the standing limit refused, by method
}

// msgKey is where a message is: its chat and id.
type msgKey struct {
	chat int64
	id   int
}

// Call is one request as the fake received it.
type Call struct {
	Method string
	Form   url.Values
	// Files are the files a multipart request carried, by field name.
	Files map[string]SentFile
}

// Answer is a canned answer (see Override).
type Answer = fakekit.Answer

// Chat is a chat the fake knows.
type Chat struct {
	ID      int64
	Type    string // private, group, supergroup, channel
	IsForum bool
}

// Message is one message in a chat, the bot's or a user's.
type Message struct {
	ChatID    int64
	MessageID int
	ThreadID  int
	FromBot   bool
	// Text is the visible text (entities parsed); Raw is what was sent,
	// ParseMode how.
	Text, Raw, ParseMode string
	// ReplyMarkup is the JSON of the inline keyboard, as sent or last
	// edited ("" for none).
	ReplyMarkup string
	// Mentions are whom the text notifies, as Telegram finds them (see
	// Parse): "@name" outside code, the tg://user links of text mentions.
	Mentions []string
	Edits    []Edit
	// Reactions are the bot's current reactions (emoji).
	Reactions []string
	// Deleted says the bot deleted it (it stays listed, for tests).
	Deleted bool
	// File is the document or photo the bot sent (Text is its caption
	// then); nil for a text message.
	File *SentFile
}

// Edit is one editMessageText applied.
type Edit struct {
	Text, ParseMode, ReplyMarkup string
	Mentions                     []string // whom the new text notifies
}

// File is a file users sent, servable by getFile.
type File struct {
	ID, UniqueID, Path string
	Size               int
}

type query struct {
	created  time.Time
	answered bool
}

// New starts a fake Bot API that stops when tb ends.
func New(tb testing.TB) *Server {
	tb.Helper()
	sig := fakekit.NewSignal("faketelegram")
	s := &Server{
		tb:       tb,
		sig:      sig,
		fed:      fakekit.NewSignal("faketelegram"),
		calls:    fakekit.NewLog[Call](sig),
		chats:    map[int64]Chat{},
		users:    map[int64]bool{},
		migrated: map[int64]int64{},
		files:    map[string]File{},
		content:  map[string]string{},
		queries:  map[string]*query{},
		refused:  map[string]int{},
	}
	s.msgs = fakekit.NewStore[msgKey](&s.mu, sig, (*Message).clone)
	s.msgIDs.Past(100)
	s.updIDs.Past(1000)
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.Close)
	return s
}

// Close stops the server; safe to call twice.
func (s *Server) Close() { s.srv.Close() }

// URL is what a client's api_url should be.
func (s *Server) URL() string { return s.srv.URL }

// Wait blocks until cond holds, failing tb after a generous limit. cond
// runs without the fake's lock and is tried again after every change.
func (s *Server) Wait(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	s.sig.Wait(tb, what, cond)
}

// WaitWithin is Wait with a limit of the caller's: a turn of the real
// claude CLI on a loaded machine takes many times the fake's own limit,
// and its tests wait as long as their run allows (testenv.HangLimit).
func (s *Server) WaitWithin(tb testing.TB, limit time.Duration, what string, cond func() bool) {
	tb.Helper()
	s.sig.WaitWithin(tb, limit, what, cond)
}

// SetWaitLimit sets how long the fake's waits (Wait, Next and the waits
// built on them) last before they fail the test, instead of its default:
// tests that drive the real claude CLI, whose start alone takes seconds on
// a loaded machine, wait as long as the engine's own real-CLI tests do.
func (s *Server) SetWaitLimit(d time.Duration) { s.sig.SetLimit(d) }

// Next returns the next request of method (in the order received, each
// once), skipping others (the polls in particular).
func (s *Server) Next(tb testing.TB, method string) Call {
	tb.Helper()
	return s.calls.Next(tb, "a "+method+" call", func(c Call) bool { return c.Method == method })
}

// Calls returns every request of method so far.
func (s *Server) Calls(method string) []Call {
	return s.calls.Select(func(c Call) bool { return c.Method == method })
}

// Override makes the next call of method answer a; several queue up.
func (s *Server) Override(method string, a Answer) { s.overrides.Add(method, a) }

// FloodWait answers the next call of method as Telegram's flood control
// does: HTTP 429 with parameters.retry_after seconds.
func (s *Server) FloodWait(method string, retryAfter int) { s.Override(method, floodWait(retryAfter)) }

// floodWait is Telegram's flood control answer.
func floodWait(retryAfter int) Answer {
	return Answer{Status: 429, Body: fmt.Sprintf(
		`{"ok":false,"error_code":429,"description":"Too Many Requests: retry after %d","parameters":{"retry_after":%d}}`, retryAfter, retryAfter)}
}

// Conflict answers the next getUpdates as Telegram does when another
// process polls the same token.
func (s *Server) Conflict() {
	s.Override("getUpdates", Answer{Status: 409, Body: conflictBody})
}

const conflictBody = `{"ok":false,"error_code":409,"description":"Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}`

// AddChat makes a chat known, so the bot may send to it.
func (s *Server) AddChat(c Chat) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chats[c.ID] = c
}

// Migrate upgrades group chat from to the supergroup to: sending to the
// old id is then refused with parameters.migrate_to_chat_id, as on
// Telegram.
func (s *Server) Migrate(from, to int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.migrated[from] = to
	s.chats[to] = Chat{ID: to, Type: "supergroup"}
}

// Sent returns the bot's messages in the order sent.
func (s *Server) Sent() []Message {
	return s.msgs.Select(func(m *Message) bool { return m.FromBot })
}

// WaitSent waits for a message of the bot that match accepts.
func (s *Server) WaitSent(tb testing.TB, what string, match func(Message) bool) Message {
	tb.Helper()
	return s.msgs.WaitFirst(tb, "a message sent: "+what, func(m Message) bool { return m.FromBot && match(m) })
}

// Message returns a message by chat and id.
func (s *Server) Message(chat int64, id int) (Message, bool) { return s.msgs.Get(msgKey{chat, id}) }

// WaitMessage waits until the message satisfies cond.
func (s *Server) WaitMessage(tb testing.TB, chat int64, id int, what string, cond func(Message) bool) Message {
	tb.Helper()
	return s.msgs.WaitKey(tb, msgKey{chat, id}, fmt.Sprintf("message %d/%d: %s", chat, id, what), cond)
}

func (m *Message) clone() Message {
	c := *m
	c.Edits = slices.Clone(m.Edits)
	c.Reactions = slices.Clone(m.Reactions)
	c.Mentions = slices.Clone(m.Mentions)
	if m.File != nil {
		f := *m.File
		f.Data = slices.Clone(m.File.Data)
		c.File = &f
	}
	return c
}

func (s *Server) addMessageLocked(m *Message) { s.msgs.PutLocked(msgKey{m.ChatID, m.MessageID}, m) }

// lookupLocked returns the message id in chat; callers hold s.mu.
func (s *Server) lookupLocked(chat int64, id int) (*Message, bool) {
	return s.msgs.LookupLocked(msgKey{chat, id})
}

// changedLocked records that m changed in place; callers hold s.mu.
func (s *Server) changedLocked(m *Message) { s.msgs.ChangedLocked(msgKey{m.ChatID, m.MessageID}) }

// AddFile makes content downloadable as file_id id (getFile, then the file
// endpoint).
func (s *Server) AddFile(id, path, content string) File {
	f := File{ID: id, UniqueID: "u" + id, Path: path, Size: len(content)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[id] = f
	s.content[path] = content
	return f
}

// Feed queues raw updates (JSON objects with their update_id) for
// getUpdates, as they are.
func (s *Server) Feed(updates ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range updates {
		var head struct {
			UpdateID int `json:"update_id"`
		}
		_ = json.Unmarshal([]byte(u), &head)
		s.updates = append(s.updates, json.RawMessage(u))
		s.updateIDs = append(s.updateIDs, head.UpdateID)
		s.updIDs.Past(int64(head.UpdateID))
	}
	s.fed.Notify()
	s.sig.Notify()
}

// Send delivers a user's message (a Bot API Message object; message_id and
// date are filled in when missing) as the next update, keeps it in its
// chat (which becomes known), and returns its message_id.
func (s *Server) Send(msg map[string]any) int {
	s.mu.Lock()
	if _, ok := msg["message_id"]; !ok {
		msg["message_id"] = int(s.msgIDs.Next())
	}
	if _, ok := msg["date"]; !ok {
		msg["date"] = time.Now().Unix()
	}
	id := toInt(msg["message_id"])
	chat, _ := msg["chat"].(map[string]any)
	chatID := int64(toInt(chat["id"]))
	if _, ok := s.chats[chatID]; !ok {
		typ, _ := chat["type"].(string)
		forum, _ := chat["is_forum"].(bool)
		s.chats[chatID] = Chat{ID: chatID, Type: typ, IsForum: forum}
	}
	text, _ := msg["text"].(string)
	from, _ := msg["from"].(map[string]any)
	if from != nil {
		s.users[int64(toInt(from["id"]))] = true
	}
	_, mentions, _ := Parse(text, "")
	s.addMessageLocked(&Message{ChatID: chatID, MessageID: id, ThreadID: toInt(msg["message_thread_id"]),
		FromBot: toInt(from["id"]) == BotID, Text: text, Raw: text, Mentions: mentions})
	b, _ := json.Marshal(map[string]any{"update_id": s.updIDs.Next(), "message": msg})
	s.mu.Unlock()
	s.Feed(string(b))
	return id
}

func toInt(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	case string:
		i, _ := strconv.Atoi(n)
		return i
	}
	return 0
}

// User builds a user object.
func User(id int64, name string, bot bool) map[string]any {
	return map[string]any{"id": id, "is_bot": bot, "first_name": name, "username": name}
}

// Update builds a raw message update.
func Update(id int, msg map[string]any) string {
	b, _ := json.Marshal(map[string]any{"update_id": id, "message": msg})
	return string(b)
}

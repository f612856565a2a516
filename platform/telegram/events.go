package telegram

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/cc-connect/cc-connect/platform"
)

// topicFields are the forum-topic fields the library (v5.5.1) predates;
// they are read from the raw update.
type topicFields struct {
	MessageThreadID int  `json:"message_thread_id"`
	IsTopicMessage  bool `json:"is_topic_message"`
}

type rawUpdate struct {
	UpdateID      int          `json:"update_id"`
	Message       *topicFields `json:"message"`
	CallbackQuery *struct {
		Message *topicFields `json:"message"`
	} `json:"callback_query"`
}

// handUpdate reads one update and hands what it carries to h: a message
// (HandleMessage), a button press (HandleAction, its answer to Telegram
// sent on a goroutine counted in answers, so that the poll loop does no
// platform call of its own). It returns false only when h did not take a
// message (it is to be handed over again); an update that is not for the
// engine, or cannot be read, is done with.
func (p *poller) handUpdate(ctx context.Context, h platform.Handler, answers *sync.WaitGroup, raw json.RawMessage) bool {
	var ru rawUpdate
	if err := json.Unmarshal(raw, &ru); err != nil {
		p.log.Warn("Telegram update not understood", "error", err)
		return true
	}
	var u tgbotapi.Update
	if err := json.Unmarshal(raw, &u); err != nil {
		p.log.Warn("Telegram update not understood", "update_id", ru.UpdateID, "error", err)
		return true
	}
	switch {
	case u.Message != nil:
		var tf topicFields
		if ru.Message != nil {
			tf = *ru.Message
		}
		m, ok := p.norm.toMessage(u.Message, tf)
		if !ok {
			return true
		}
		p.seen.noteSeen(m)
		p.log.Debug("Telegram message received", "channel", m.Target.Channel, "thread", m.Target.Thread, "user_id", m.UserID, "user_name", m.UserName, "mentioned", m.Mentioned)
		// getUpdates's offset keeps updates from coming twice within a
		// run; after a restart one not confirmed comes again, with the
		// same message id, which the engine's duplicate check catches.
		if _, err := h.HandleMessage(ctx, m); err != nil {
			if ctx.Err() == nil {
				p.log.Warn("Engine did not accept Telegram message", "channel", m.Target.Channel, "thread", m.Target.Thread, "error", err)
			}
			return false
		}
	case u.CallbackQuery != nil:
		var tf topicFields
		if ru.CallbackQuery != nil && ru.CallbackQuery.Message != nil {
			tf = *ru.CallbackQuery.Message
		}
		// Telegram shows a spinner on the button until the press is
		// answered: at once, beside the hand-over.
		answers.Go(func() {
			if _, err := p.api.call(ctx, "answerCallbackQuery", tgbotapi.Params{"callback_query_id": u.CallbackQuery.ID}); err != nil {
				p.log.Warn("Answering Telegram button press failed", "error", err)
			}
		})
		if act, ok := p.buttons.action(u.CallbackQuery, tf); ok {
			if err := h.HandleAction(ctx, act); err != nil && ctx.Err() == nil {
				p.log.Warn("Engine did not accept Telegram button press", "channel", act.Target.Channel, "thread", act.Target.Thread, "error", err)
			}
		}
	}
	return true
}

// topicOf is a forum topic's thread ("" outside a topic), as Target.Thread
// names it.
func topicOf(tf topicFields) string {
	if tf.IsTopicMessage && tf.MessageThreadID != 0 {
		return strconv.Itoa(tf.MessageThreadID)
	}
	return ""
}

// normalizer reads Telegram's messages as the engine's: who wrote them,
// in which chat and topic, whether they address the bot, their text and
// files. It calls nothing.
type normalizer struct {
	name  string
	log   *slog.Logger
	self  *botSelf
	files *files
}

// toMessage normalizes a user message; ok is false for what the engine
// must not see (bots, the bot itself, service messages, empty messages).
func (n normalizer) toMessage(msg *tgbotapi.Message, tf topicFields) (platform.Message, bool) {
	if msg.From == nil || msg.Chat == nil {
		return platform.Message{}, false // channel posts and anonymous senders
	}
	chat := strconv.FormatInt(msg.Chat.ID, 10)
	if msg.MigrateToChatID != 0 {
		n.log.Warn("Telegram group became a supergroup; bind the new chat id", "channel", chat, "new_channel", msg.MigrateToChatID)
		return platform.Message{}, false
	}
	self := n.self.get()
	if msg.From.IsBot || msg.From.ID == self.ID {
		return platform.Message{}, false
	}
	text, entities := msg.Text, msg.Entities
	if text == "" {
		text, entities = msg.Caption, msg.CaptionEntities
	}
	atts := n.files.attachments(msg)
	if strings.TrimSpace(text) == "" && len(atts) == 0 {
		return platform.Message{}, false // joins, pins, stickers and other service messages
	}

	thread := topicOf(tf)
	clean, mentioned, forOther := stripMention(text, entities, self.UserName)
	if forOther {
		return platform.Message{}, false // a /command@otherbot
	}
	// In a forum topic every message "replies" to the topic's first
	// message; only a reply to a real bot message counts as addressing it.
	if r := msg.ReplyToMessage; r != nil && r.From != nil && r.From.ID == self.ID && r.MessageID != tf.MessageThreadID {
		mentioned = true
	}
	isDM := msg.Chat.Type == "private"
	return platform.Message{
		ID: chat + ":" + strconv.Itoa(msg.MessageID),
		Target: platform.Target{
			Platform:  n.name,
			Channel:   chat,
			Thread:    thread,
			MessageID: strconv.Itoa(msg.MessageID),
		},
		UserID:      strconv.FormatInt(msg.From.ID, 10),
		UserName:    displayName(msg.From),
		Text:        clean,
		IsDM:        isDM,
		Mentioned:   mentioned,
		IsBot:       msg.From.IsBot,
		Attachments: atts,
		Received:    time.Unix(int64(msg.Date), 0),
		// Message ids count up within a chat (its topics included).
		Seq: uint64(max(msg.MessageID, 0)),
	}, true
}

func displayName(u *tgbotapi.User) string {
	if u.UserName != "" {
		return u.UserName
	}
	return strings.TrimSpace(u.FirstName + " " + u.LastName)
}

// stripMention removes "@bot" mentions and the "@bot" suffix of a command
// from text. It reports whether the bot was addressed (a mention or any
// command for it) and whether the message is a command for another bot.
// Entity offsets are in UTF-16 code units, as Telegram sends them.
func stripMention(text string, entities []tgbotapi.MessageEntity, bot string) (clean string, mentioned, forOther bool) {
	units := utf16.Encode([]rune(text))
	at := "@" + strings.ToLower(bot)
	type cut struct {
		from, to int
		tidy     bool // also drop one space next to the cut
	}
	var cuts []cut
	for _, e := range entities {
		if e.Offset < 0 || e.Length <= 0 || e.Offset+e.Length > len(units) {
			continue
		}
		s := string(utf16.Decode(units[e.Offset : e.Offset+e.Length]))
		switch e.Type {
		case "mention":
			if bot != "" && strings.ToLower(s) == at {
				mentioned = true
				cuts = append(cuts, cut{e.Offset, e.Offset + e.Length, true})
			}
		case "bot_command":
			if e.Offset != 0 {
				continue
			}
			i := strings.IndexByte(s, '@')
			if i < 0 {
				mentioned = true
				continue
			}
			if bot != "" && strings.ToLower(s[i:]) == at {
				mentioned = true
				n := len(utf16.Encode([]rune(s[:i])))
				cuts = append(cuts, cut{e.Offset + n, e.Offset + e.Length, false})
				continue
			}
			forOther = true
		}
	}
	if entities == nil && bot != "" {
		// No entities (some clients and forwarded text): fall back to a
		// whole-word search.
		lower := strings.ToLower(text)
		for i := strings.Index(lower, at); i >= 0; {
			end := i + len(at)
			if end == len(lower) || !isNameChar(lower[end]) {
				mentioned = true
				from := len(utf16.Encode([]rune(text[:i])))
				cuts = append(cuts, cut{from, from + len(at), true})
			}
			next := strings.Index(lower[end:], at)
			if next < 0 {
				break
			}
			i = end + next
		}
	}
	if len(cuts) == 0 {
		return strings.TrimSpace(text), mentioned, forOther
	}
	slices.SortFunc(cuts, func(x, y cut) int { return x.from - y.from })
	var out []uint16
	prev := 0
	for _, c := range cuts {
		if c.from < prev {
			continue
		}
		// Only the space next to a mention goes; indentation and code
		// elsewhere in the message stay as written.
		if c.tidy {
			if c.to < len(units) && units[c.to] == ' ' {
				c.to++
			} else if c.from > prev && units[c.from-1] == ' ' {
				c.from--
			}
		}
		out = append(out, units[prev:c.from]...)
		prev = c.to
	}
	out = append(out, units[prev:]...)
	return strings.TrimSpace(string(utf16.Decode(out))), mentioned, forOther
}

func isNameChar(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
}

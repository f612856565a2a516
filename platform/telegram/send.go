package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/coalesce"
	"github.com/cc-connect/cc-connect/platform/internal/recent"
)

// wire is the Bot API calls everything posts through: a message sent in
// parts (HTML, or plain text where Telegram refuses the HTML), edits paced
// per chat, deletions, reactions and typing, each post and edit noted in
// what the bot has seen (History).
type wire struct {
	name  string
	log   *slog.Logger
	api   *api
	seen  *seen
	edits *coalesce.Coalescer
	// reactions remembers the one reaction the bot holds on each message
	// ("chat:message" -> name): Telegram gives a bot a single reaction per
	// message, so a new one replaces the old, and removing a reaction that
	// was already replaced must not clear its successor.
	reactions *recent.Map[string]
}

// groupEditFactor: Telegram lets a bot post about one message a second in
// a private chat and twenty a minute in a group, so edits in a group are
// spaced three times as far apart.
const groupEditFactor = 3

// messageParams addresses a chat and, for a forum topic, the topic.
// message_thread_id is not in the library's configs, hence raw params.
func (w *wire) messageParams(to platform.Target) tgbotapi.Params {
	p := tgbotapi.Params{"chat_id": to.Channel}
	if to.Thread != "" {
		p["message_thread_id"] = to.Thread
	}
	return p
}

// bareMessageID accepts both "<message_id>" and "<chat_id>:<message_id>".
func bareMessageID(id string) string {
	if i := strings.LastIndexByte(id, ':'); i >= 0 {
		return id[i+1:]
	}
	return id
}

// sendMessage posts one message and returns its id. A group that became a
// supergroup is followed once to its new chat id.
func (w *wire) sendMessage(ctx context.Context, params tgbotapi.Params) (int, error) {
	raw, err := w.api.call(ctx, "sendMessage", params)
	var ae *APIError
	if errors.As(err, &ae) && ae.MigrateToChatID != 0 {
		w.log.Warn("Telegram group became a supergroup; sending to the new chat id, update the binding", "channel", params["chat_id"], "new_channel", ae.MigrateToChatID)
		params["chat_id"] = strconv.FormatInt(ae.MigrateToChatID, 10)
		raw, err = w.api.call(ctx, "sendMessage", params)
	}
	if err != nil {
		return 0, err
	}
	var m tgbotapi.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		return 0, fmt.Errorf("telegram sendMessage: decoding: %w", err)
	}
	return m.MessageID, nil
}

// send posts text in parts, the first starting with the mentions.
func (w *wire) send(ctx context.Context, to platform.Target, mentions []platform.Mention, text string) (platform.Target, error) {
	if strings.TrimSpace(text) == "" {
		return platform.Target{}, errors.New("telegram send: empty text")
	}
	var html, plain strings.Builder // the mentions, and their names for plain text
	for _, m := range mentions {
		name := m.UserName
		if name == "" {
			name = "user " + m.UserID
		}
		name = noMentions(name)
		html.WriteString(`<a href="tg://user?id=` + m.UserID + `">` + escapeHTML(name) + "</a> ")
		plain.WriteString(name + " ")
	}
	last := platform.Target{}
	parts := splitForTelegram(text)
	if n := len(utf16.Encode([]rune(plain.String()))); n > 0 {
		parts = platform.SplitMessageUTF16(text, splitLimit-n, messageLimit-n)
	}
	for i, part := range parts {
		prefix, plainPrefix := "", ""
		if i == 0 {
			prefix, plainPrefix = html.String(), plain.String()
		}
		params := w.messageParams(to)
		params["text"] = prefix + toHTML(part)
		params["parse_mode"] = "HTML"
		params["disable_web_page_preview"] = "true"
		if i == 0 && to.MessageID != "" {
			params["reply_to_message_id"] = bareMessageID(to.MessageID)
			params["allow_sending_without_reply"] = "true"
		}
		id, err := w.sendMessage(ctx, params)
		if isParseError(err) {
			w.log.Warn("Telegram refused the formatting, sending plain text", "channel", to.Channel, "thread", to.Thread, "error", err)
			delete(params, "parse_mode")
			params["text"] = plainPrefix + noMentions(part)
			id, err = w.sendMessage(ctx, params)
		}
		if err != nil {
			return last, fmt.Errorf("sending part %d/%d to %s: %w", i+1, len(parts), to.Channel, err)
		}
		last = platform.Target{Platform: w.name, Channel: params["chat_id"], Thread: to.Thread, MessageID: strconv.Itoa(id)}
		w.seen.noteSent(to, id, part)
	}
	return last, nil
}

// edit replaces the text of a posted message, paced per chat (editSpacing);
// an edit overtaken by a newer one while it waits is skipped. Text longer
// than one message is cut, since an edit cannot add messages.
func (w *wire) edit(ctx context.Context, msg platform.Target, text string) error {
	id := bareMessageID(msg.MessageID)
	if id == "" {
		return errors.New("telegram edit: no message id")
	}
	if parts := splitForTelegram(text); len(parts) > 0 {
		text = parts[0]
	}
	key := msg.Channel + ":" + id
	return w.edits.Do(ctx, key, msg.Channel, text, func(ctx context.Context) error {
		err := w.editMessage(ctx, msg.Channel, id, toHTML(text), "")
		if isParseError(err) {
			err = w.editPlain(ctx, msg.Channel, id, text)
		}
		if err != nil && !isNotModified(err) {
			return fmt.Errorf("editing message %s in %s: %w", id, msg.Channel, err)
		}
		w.seen.log.Edit(msg, id, text)
		return nil
	})
}

func (w *wire) editMessage(ctx context.Context, chat, id, html, markup string) error {
	p := tgbotapi.Params{"chat_id": chat, "message_id": id, "text": html, "parse_mode": "HTML", "disable_web_page_preview": "true"}
	if markup != "" {
		p["reply_markup"] = markup
	}
	_, err := w.api.call(ctx, "editMessageText", p)
	return err
}

func (w *wire) editPlain(ctx context.Context, chat, id, text string) error {
	_, err := w.api.call(ctx, "editMessageText", tgbotapi.Params{"chat_id": chat, "message_id": id, "text": noMentions(text), "disable_web_page_preview": "true"})
	return err
}

// typing shows "typing…" in the chat (or topic) for about five seconds.
func (w *wire) typing(ctx context.Context, to platform.Target) error {
	p := w.messageParams(to)
	p["action"] = "typing"
	if _, err := w.api.call(ctx, "sendChatAction", p); err != nil {
		return fmt.Errorf("sending typing to %s: %w", to.Channel, err)
	}
	return nil
}

// postPart posts one part as Send does: HTML, or plain text when Telegram
// refuses the HTML; the first replies to to's message.
func (w *wire) postPart(ctx context.Context, to platform.Target, part string, first bool) (platform.Target, error) {
	params := w.messageParams(to)
	params["text"] = toHTML(part)
	params["parse_mode"] = "HTML"
	params["disable_web_page_preview"] = "true"
	if first && to.MessageID != "" {
		params["reply_to_message_id"] = bareMessageID(to.MessageID)
		params["allow_sending_without_reply"] = "true"
	}
	id, err := w.sendMessage(ctx, params)
	if isParseError(err) {
		delete(params, "parse_mode")
		params["text"] = noMentions(part)
		id, err = w.sendMessage(ctx, params)
	}
	if err != nil {
		return platform.Target{}, err
	}
	return platform.Target{Platform: w.name, Channel: params["chat_id"], Thread: to.Thread, MessageID: strconv.Itoa(id)}, nil
}

// delete removes one of the bot's messages; one already gone is fine.
func (w *wire) delete(ctx context.Context, msg platform.Target) error {
	id := bareMessageID(msg.MessageID)
	_, err := w.api.call(ctx, "deleteMessage", tgbotapi.Params{"chat_id": msg.Channel, "message_id": id})
	var ae *APIError
	if err != nil && !(errors.As(err, &ae) && strings.Contains(ae.Description, "message to delete not found")) {
		return fmt.Errorf("deleting message %s in %s: %w", id, msg.Channel, err)
	}
	return nil
}

// editSpacing is how far apart edits in one chat go: EditInterval in a
// private chat, groupEditFactor times that in a group or supergroup
// (whose ids are negative).
func editSpacing(d time.Duration) func(chat string) time.Duration {
	return func(chat string) time.Duration {
		if strings.HasPrefix(chat, "-") {
			return groupEditFactor * d
		}
		return d
	}
}

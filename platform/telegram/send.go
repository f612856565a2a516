package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/cc-connect/cc-connect/platform"
)

// messageParams addresses a chat and, for a forum topic, the topic.
// message_thread_id is not in the library's configs, hence raw params.
func (a *Adapter) messageParams(to platform.Target) tgbotapi.Params {
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
func (a *Adapter) sendMessage(ctx context.Context, params tgbotapi.Params) (int, error) {
	raw, err := a.call(ctx, "sendMessage", params)
	var ae *APIError
	if errors.As(err, &ae) && ae.MigrateToChatID != 0 {
		a.log.Warn("Telegram group became a supergroup; sending to the new chat id, update the binding", "channel", params["chat_id"], "new_channel", ae.MigrateToChatID)
		params["chat_id"] = strconv.FormatInt(ae.MigrateToChatID, 10)
		raw, err = a.call(ctx, "sendMessage", params)
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

// Send posts text (Claude Code's Markdown) as Telegram HTML, split under
// 4,096 characters without breaking code blocks. A part whose HTML Telegram
// refuses is sent again as plain text, so a reply is never lost to
// formatting. It returns the last posted message.
func (a *Adapter) Send(ctx context.Context, to platform.Target, text string) (platform.Target, error) {
	return a.send(ctx, to, nil, text)
}

// SendMentioning is Send starting with a text mention of each user (a
// tg://user link on their name), which notifies them, and only them.
func (a *Adapter) SendMentioning(ctx context.Context, to platform.Target, mentions []platform.Mention, text string) (platform.Target, error) {
	for _, m := range mentions {
		if _, err := strconv.ParseInt(m.UserID, 10, 64); err != nil {
			return platform.Target{}, fmt.Errorf("telegram send to %s: %q is not a Telegram user id", to.Channel, m.UserID)
		}
	}
	return a.send(ctx, to, mentions, text)
}

// send posts text in parts, the first starting with the mentions.
func (a *Adapter) send(ctx context.Context, to platform.Target, mentions []platform.Mention, text string) (platform.Target, error) {
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
		params := a.messageParams(to)
		params["text"] = prefix + toHTML(part)
		params["parse_mode"] = "HTML"
		params["disable_web_page_preview"] = "true"
		if i == 0 && to.MessageID != "" {
			params["reply_to_message_id"] = bareMessageID(to.MessageID)
			params["allow_sending_without_reply"] = "true"
		}
		id, err := a.sendMessage(ctx, params)
		if isParseError(err) {
			a.log.Warn("Telegram refused the formatting, sending plain text", "channel", to.Channel, "thread", to.Thread, "error", err)
			delete(params, "parse_mode")
			params["text"] = plainPrefix + noMentions(part)
			id, err = a.sendMessage(ctx, params)
		}
		if err != nil {
			return last, fmt.Errorf("sending part %d/%d to %s: %w", i+1, len(parts), to.Channel, err)
		}
		last = platform.Target{Platform: a.cfg.Name, Channel: params["chat_id"], Thread: to.Thread, MessageID: strconv.Itoa(id)}
		a.noteSent(to, id, part)
	}
	return last, nil
}

// Edit replaces the text of a posted message (progress updates). Edits of
// one message are spaced by EditInterval; an edit overtaken by a newer one
// while it waits is skipped, the newest is always applied. Text longer than
// one message is cut, since an edit cannot add messages.
func (a *Adapter) Edit(ctx context.Context, msg platform.Target, text string) error {
	id := bareMessageID(msg.MessageID)
	if id == "" {
		return errors.New("telegram edit: no message id")
	}
	if parts := splitForTelegram(text); len(parts) > 0 {
		text = parts[0]
	}
	key := msg.Channel + ":" + id
	return a.edits.Do(ctx, key, key, text, func(ctx context.Context) error {
		err := a.editMessage(ctx, msg.Channel, id, toHTML(text), "")
		if isParseError(err) {
			err = a.editPlain(ctx, msg.Channel, id, text)
		}
		if err != nil && !isNotModified(err) {
			return fmt.Errorf("editing message %s in %s: %w", id, msg.Channel, err)
		}
		a.history.Edit(msg, id, text)
		return nil
	})
}

func (a *Adapter) editMessage(ctx context.Context, chat, id, html, markup string) error {
	p := tgbotapi.Params{"chat_id": chat, "message_id": id, "text": html, "parse_mode": "HTML", "disable_web_page_preview": "true"}
	if markup != "" {
		p["reply_markup"] = markup
	}
	_, err := a.call(ctx, "editMessageText", p)
	return err
}

func (a *Adapter) editPlain(ctx context.Context, chat, id, text string) error {
	_, err := a.call(ctx, "editMessageText", tgbotapi.Params{"chat_id": chat, "message_id": id, "text": noMentions(text), "disable_web_page_preview": "true"})
	return err
}

// Typing shows "typing…" in the chat (or topic) for about five seconds.
func (a *Adapter) Typing(ctx context.Context, to platform.Target) error {
	p := a.messageParams(to)
	p["action"] = "typing"
	if _, err := a.call(ctx, "sendChatAction", p); err != nil {
		return fmt.Errorf("sending typing to %s: %w", to.Channel, err)
	}
	return nil
}

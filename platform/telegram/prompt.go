package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/permbutton"
	"github.com/cc-connect/cc-connect/platform/internal/recent"
)

// prompts shows permission requests and Claude's questions with buttons,
// remembers the prompts it posted, and reads presses on them back as
// actions.
type prompts struct {
	name string
	log  *slog.Logger
	wire *wire
	open *recent.Map[string] // "chat:message" -> prompt HTML, shown again with the outcome
	refs *permbutton.Refs
}

// maxCallbackData is Telegram's limit on callback_data, in bytes, which
// carries a permbutton payload.
const maxCallbackData = 64

// askPermission posts the permission request with Allow, Always allow and
// Deny buttons; presses come back through Handler.HandleAction. The
// request's text is shown whole: when it is over one message, the parts
// before the last are posted first and the buttons go under the last.
func (ps *prompts) askPermission(ctx context.Context, to platform.Target, p platform.PermissionPrompt) (platform.Target, error) {
	parts := splitForTelegram(p.Text)
	for i, part := range parts[:len(parts)-1] {
		params := ps.wire.messageParams(to)
		params["text"] = toHTML(part)
		params["parse_mode"] = "HTML"
		params["disable_web_page_preview"] = "true"
		if _, err := ps.wire.sendMessage(ctx, params); err != nil {
			return platform.Target{}, fmt.Errorf("asking permission in %s: part %d/%d: %w", to.Channel, i+1, len(parts), err)
		}
	}
	html := toHTML(parts[len(parts)-1])
	ref := ps.refs.Ref(p.RequestID)
	button := func(label string, c platform.Choice) tgbotapi.InlineKeyboardButton {
		return tgbotapi.NewInlineKeyboardButtonData(label, permbutton.Data(c, ref))
	}
	kb := tgbotapi.NewInlineKeyboardMarkup(tgbotapi.NewInlineKeyboardRow(
		button("✅ Allow", platform.ChoiceAllow),
		button("♾ Always allow", platform.ChoiceAlwaysAllow),
		button("⛔ Deny", platform.ChoiceDeny),
	))
	if len(p.Choices) > 0 {
		// A plan's choices: one a row, their labels being longer.
		kb.InlineKeyboard = nil
		for _, c := range p.Choices {
			if !permbutton.Known(c.Choice) {
				return platform.Target{}, fmt.Errorf("asking permission in %s: no button for choice %q", to.Channel, c.Choice)
			}
			kb.InlineKeyboard = append(kb.InlineKeyboard, tgbotapi.NewInlineKeyboardRow(button(optionLabel(c.Label), c.Choice)))
		}
	}
	markup, err := json.Marshal(kb)
	if err != nil {
		return platform.Target{}, fmt.Errorf("asking permission: %w", err)
	}
	params := ps.wire.messageParams(to)
	params["text"] = html
	params["parse_mode"] = "HTML"
	params["disable_web_page_preview"] = "true"
	params["reply_markup"] = string(markup)
	id, err := ps.wire.sendMessage(ctx, params)
	if err != nil {
		return platform.Target{}, fmt.Errorf("asking permission in %s: %w", to.Channel, err)
	}
	posted := platform.Target{Platform: ps.name, Channel: params["chat_id"], Thread: to.Thread, MessageID: strconv.Itoa(id)}
	ps.open.Put(posted.Channel+":"+posted.MessageID, html)
	return posted, nil
}

// resolvePermission shows the outcome under the prompt and removes the
// buttons, so nobody answers twice. A prompt with no room left for the
// outcome keeps its text, and the outcome follows as a message of its own.
func (ps *prompts) resolvePermission(ctx context.Context, prompt platform.Target, outcome string) error {
	msgID := bareMessageID(prompt.MessageID)
	html, _ := ps.open.Get(prompt.Channel + ":" + msgID)
	result := "<i>" + escapeHTML(noMentions(outcome)) + "</i>"
	separate := false
	switch {
	case html == "":
		html = result
	case htmlTextLen(html+"\n\n"+result) > messageLimit:
		separate = true
	default:
		html += "\n\n" + result
	}
	err := ps.wire.editMessage(ctx, prompt.Channel, msgID, html, `{"inline_keyboard":[]}`)
	if err != nil && !isNotModified(err) {
		return fmt.Errorf("resolving permission prompt in %s: %w", prompt.Channel, err)
	}
	if separate {
		params := ps.wire.messageParams(prompt)
		params["text"] = result
		params["parse_mode"] = "HTML"
		if _, err := ps.wire.sendMessage(ctx, params); err != nil {
			return fmt.Errorf("posting the outcome of a permission prompt in %s: %w", prompt.Channel, err)
		}
	}
	return nil
}

// action reads a press of one of the adapter's buttons as an action; false
// for a press on anything else.
func (ps *prompts) action(q *tgbotapi.CallbackQuery, tf topicFields) (platform.Action, bool) {
	if q.From == nil || q.Message == nil || q.Message.Chat == nil {
		return platform.Action{}, false
	}
	var (
		question int
		options  platform.OptionSet
	)
	choice, ref, ok := permbutton.Decode(q.Data)
	if !ok {
		choice, question, options, ref, ok = questionPress(q.Data)
	}
	if !ok {
		return platform.Action{}, false // not one of our buttons
	}
	reqID, ok := ps.refs.RequestID(ref)
	if !ok {
		ps.log.Warn("Telegram button press for an unknown prompt", "channel", q.Message.Chat.ID)
		return platform.Action{}, false
	}
	thread := ""
	if tf.IsTopicMessage && tf.MessageThreadID != 0 {
		thread = strconv.Itoa(tf.MessageThreadID)
	}
	act := platform.Action{
		ID: q.ID, // the same when the update is read again (a poller taking over)
		Target: platform.Target{
			Platform:  ps.name,
			Channel:   strconv.FormatInt(q.Message.Chat.ID, 10),
			Thread:    thread,
			MessageID: strconv.Itoa(q.Message.MessageID),
		},
		UserID:    strconv.FormatInt(q.From.ID, 10),
		UserName:  displayName(q.From),
		RequestID: reqID,
		Choice:    choice,
		Question:  question,
		Options:   options,
	}
	return act, true
}

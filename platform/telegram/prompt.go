package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/permbutton"
)

// maxCallbackData is Telegram's limit on callback_data, in bytes, which
// carries a permbutton payload.
const maxCallbackData = 64

// AskPermission posts the permission request with Allow, Always allow and
// Deny buttons; presses come back through Handler.HandleAction. The
// request's text is shown whole: when it is over one message, the parts
// before the last are posted first and the buttons go under the last.
func (a *Adapter) AskPermission(ctx context.Context, to platform.Target, p platform.PermissionPrompt) (platform.Target, error) {
	parts := splitForTelegram(p.Text)
	for i, part := range parts[:len(parts)-1] {
		params := a.messageParams(to)
		params["text"] = toHTML(part)
		params["parse_mode"] = "HTML"
		params["disable_web_page_preview"] = "true"
		if _, err := a.sendMessage(ctx, params); err != nil {
			return platform.Target{}, fmt.Errorf("asking permission in %s: part %d/%d: %w", to.Channel, i+1, len(parts), err)
		}
	}
	html := toHTML(parts[len(parts)-1])
	ref := a.promptRefs.Ref(p.RequestID)
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
	params := a.messageParams(to)
	params["text"] = html
	params["parse_mode"] = "HTML"
	params["disable_web_page_preview"] = "true"
	params["reply_markup"] = string(markup)
	id, err := a.sendMessage(ctx, params)
	if err != nil {
		return platform.Target{}, fmt.Errorf("asking permission in %s: %w", to.Channel, err)
	}
	posted := platform.Target{Platform: a.cfg.Name, Channel: params["chat_id"], Thread: to.Thread, MessageID: strconv.Itoa(id)}
	a.prompts.Put(posted.Channel+":"+posted.MessageID, html)
	return posted, nil
}

// ResolvePermission shows the outcome under the prompt and removes the
// buttons, so nobody answers twice. A prompt with no room left for the
// outcome keeps its text, and the outcome follows as a message of its own.
func (a *Adapter) ResolvePermission(ctx context.Context, prompt platform.Target, outcome string) error {
	msgID := bareMessageID(prompt.MessageID)
	html, _ := a.prompts.Get(prompt.Channel + ":" + msgID)
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
	err := a.editMessage(ctx, prompt.Channel, msgID, html, `{"inline_keyboard":[]}`)
	if err != nil && !isNotModified(err) {
		return fmt.Errorf("resolving permission prompt in %s: %w", prompt.Channel, err)
	}
	if separate {
		params := a.messageParams(prompt)
		params["text"] = result
		params["parse_mode"] = "HTML"
		if _, err := a.sendMessage(ctx, params); err != nil {
			return fmt.Errorf("posting the outcome of a permission prompt in %s: %w", prompt.Channel, err)
		}
	}
	return nil
}

// handleCallback hands our buttons' presses to the engine.
func (a *Adapter) handleCallback(ctx context.Context, h platform.Handler, q *tgbotapi.CallbackQuery, tf topicFields) {
	if q.From == nil || q.Message == nil || q.Message.Chat == nil {
		return
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
		return // not one of our buttons
	}
	reqID, ok := a.promptRefs.RequestID(ref)
	if !ok {
		a.log.Warn("Telegram button press for an unknown prompt", "channel", q.Message.Chat.ID)
		return
	}
	thread := ""
	if tf.IsTopicMessage && tf.MessageThreadID != 0 {
		thread = strconv.Itoa(tf.MessageThreadID)
	}
	act := platform.Action{
		ID: q.ID, // the same when the update is read again (a poller taking over)
		Target: platform.Target{
			Platform:  a.cfg.Name,
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
	if err := h.HandleAction(ctx, act); err != nil && ctx.Err() == nil {
		a.log.Warn("Engine did not accept Telegram button press", "channel", act.Target.Channel, "thread", thread, "error", err)
	}
}

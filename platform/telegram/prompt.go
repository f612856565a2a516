package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/permbutton"
)

// maxCallbackData is Telegram's limit on callback_data, in bytes, which
// carries a permbutton payload.
const maxCallbackData = 64

// AskPermission posts the permission request with Allow, Always allow and
// Deny buttons; presses come back through Handler.HandleAction.
func (a *Adapter) AskPermission(ctx context.Context, to platform.Target, p platform.PermissionPrompt) (platform.Target, error) {
	html := promptHTML(p)
	ref := a.promptRefs.Ref(p.RequestID)
	button := func(label string, c platform.Choice) tgbotapi.InlineKeyboardButton {
		return tgbotapi.NewInlineKeyboardButtonData(label, permbutton.Data(c, ref))
	}
	kb := tgbotapi.NewInlineKeyboardMarkup(tgbotapi.NewInlineKeyboardRow(
		button("✅ Allow", platform.ChoiceAllow),
		button("♾ Always allow", platform.ChoiceAlwaysAllow),
		button("⛔ Deny", platform.ChoiceDeny),
	))
	markup, err := json.Marshal(kb)
	if err != nil {
		return platform.Target{}, fmt.Errorf("asking permission: %w", err)
	}
	params := a.messageParams(to)
	params["text"] = html
	params["parse_mode"] = "HTML"
	params["reply_markup"] = string(markup)
	id, err := a.sendMessage(ctx, params)
	if err != nil {
		return platform.Target{}, fmt.Errorf("asking permission in %s: %w", to.Channel, err)
	}
	posted := platform.Target{Platform: a.cfg.Name, Channel: params["chat_id"], Thread: to.Thread, MessageID: strconv.Itoa(id)}
	a.prompts.Put(posted.Channel+":"+posted.MessageID, html)
	return posted, nil
}

// promptHTML renders the prompt in Telegram's HTML. The Discord and Slack
// adapters render the same fields in their own markdown: the markup
// differs, so each adapter keeps its own.
func promptHTML(p platform.PermissionPrompt) string {
	var b strings.Builder
	b.WriteString("🔐 <b>Permission needed</b>: <code>" + escapeHTML(p.Tool) + "</code>")
	if p.Summary != "" {
		b.WriteString("\n" + escapeHTML(p.Summary))
	}
	if p.Path != "" {
		b.WriteString("\nPath: <code>" + escapeHTML(p.Path) + "</code>")
	}
	return b.String()
}

// ResolvePermission shows the outcome under the prompt and removes the
// buttons, so nobody answers twice.
func (a *Adapter) ResolvePermission(ctx context.Context, prompt platform.Target, outcome string) error {
	msgID := bareMessageID(prompt.MessageID)
	html, _ := a.prompts.Get(prompt.Channel + ":" + msgID)
	if html != "" {
		html += "\n\n"
	}
	html += "<i>" + escapeHTML(outcome) + "</i>"
	err := a.editMessage(ctx, prompt.Channel, msgID, html, `{"inline_keyboard":[]}`)
	if err != nil && !isNotModified(err) {
		return fmt.Errorf("resolving permission prompt in %s: %w", prompt.Channel, err)
	}
	return nil
}

// handleCallback answers a button press at once (Telegram shows a spinner
// until then) and hands our buttons' presses to the engine.
func (a *Adapter) handleCallback(ctx context.Context, h platform.Handler, q *tgbotapi.CallbackQuery, tf topicFields) {
	if _, err := a.call(ctx, "answerCallbackQuery", tgbotapi.Params{"callback_query_id": q.ID}); err != nil {
		a.log.Warn("Answering Telegram button press failed", "error", err)
	}
	if q.From == nil || q.Message == nil || q.Message.Chat == nil {
		return
	}
	choice, ref, ok := permbutton.Decode(q.Data)
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
	}
	if err := h.HandleAction(ctx, act); err != nil && ctx.Err() == nil {
		a.log.Warn("Engine did not accept Telegram button press", "channel", act.Target.Channel, "thread", thread, "error", err)
	}
}

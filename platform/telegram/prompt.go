package telegram

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/cc-connect/cc-connect/platform"
)

// callbackPrefix marks our buttons' callback_data ("ccp|<choice>|<ref>").
const callbackPrefix = "ccp|"

// maxCallbackData is Telegram's limit on callback_data, in bytes.
const maxCallbackData = 64

var choiceCodes = map[platform.Choice]string{
	platform.ChoiceAllow:       "a",
	platform.ChoiceAlwaysAllow: "A",
	platform.ChoiceDeny:        "d",
}

// promptStore remembers what the buttons of recent prompts refer to: the
// prompt text (to show it again with the outcome) and, for request ids too
// long for callback_data, the id behind a short reference. Bounded, oldest
// forgotten first.
type promptStore struct {
	mu     sync.Mutex // guards the maps and order
	max    int
	text   map[string]string // "chat:message" -> prompt HTML
	refs   map[string]string // short ref -> request id
	order  []string          // keys of text, oldest first
	rorder []string
}

func newPromptStore(max int) *promptStore {
	return &promptStore{max: max, text: make(map[string]string), refs: make(map[string]string)}
}

func (p *promptStore) ref(requestID string) string {
	if len(callbackPrefix)+2+len(requestID) <= maxCallbackData && !strings.Contains(requestID, "|") {
		return requestID
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	ref := "~" + hex.EncodeToString(b[:])
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refs[ref] = requestID
	p.rorder = append(p.rorder, ref)
	for len(p.rorder) > p.max {
		delete(p.refs, p.rorder[0])
		p.rorder = p.rorder[1:]
	}
	return ref
}

func (p *promptStore) requestID(ref string) (string, bool) {
	if !strings.HasPrefix(ref, "~") {
		return ref, true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	id, ok := p.refs[ref]
	return id, ok
}

func (p *promptStore) remember(key, html string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.text[key] = html
	p.order = append(p.order, key)
	for len(p.order) > p.max {
		delete(p.text, p.order[0])
		p.order = p.order[1:]
	}
}

func (p *promptStore) promptText(key string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.text[key]
}

// AskPermission posts the permission request with Allow, Always allow and
// Deny buttons; presses come back through Handler.HandleAction.
func (a *Adapter) AskPermission(ctx context.Context, to platform.Target, p platform.PermissionPrompt) (platform.Target, error) {
	html := promptHTML(p)
	ref := a.prompts.ref(p.RequestID)
	button := func(label string, c platform.Choice) tgbotapi.InlineKeyboardButton {
		return tgbotapi.NewInlineKeyboardButtonData(label, callbackPrefix+choiceCodes[c]+"|"+ref)
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
	a.prompts.remember(posted.Channel+":"+posted.MessageID, html)
	return posted, nil
}

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
	html := a.prompts.promptText(prompt.Channel + ":" + msgID)
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
		a.log.Warn("Answering Telegram button press failed", "err", err)
	}
	if q.From == nil || q.Message == nil || q.Message.Chat == nil || !strings.HasPrefix(q.Data, callbackPrefix) {
		return
	}
	parts := strings.SplitN(strings.TrimPrefix(q.Data, callbackPrefix), "|", 2)
	if len(parts) != 2 {
		return
	}
	var choice platform.Choice
	for c, code := range choiceCodes {
		if code == parts[0] {
			choice = c
		}
	}
	reqID, ok := a.prompts.requestID(parts[1])
	if choice == "" || !ok {
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
		a.log.Warn("Engine did not accept Telegram button press", "channel", act.Target.Channel, "thread", thread, "err", err)
	}
}

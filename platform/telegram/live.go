package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/permbutton"
)

// What a running turn shows on Telegram: the reply edited in place as it
// is written (EditReply), deleted leftovers, Claude's questions on an
// inline keyboard, and what the adapter can do (Capabilities).

var (
	_ platform.Capable       = (*Adapter)(nil)
	_ platform.ReplyEditor   = (*Adapter)(nil)
	_ platform.Deleter       = (*Adapter)(nil)
	_ platform.QuestionAsker = (*Adapter)(nil)
)

// optionLabelLimit keeps an option's button readable on a phone; the
// whole option is in the prompt's text.
const optionLabelLimit = 40

// groupEditFactor: Telegram lets a bot post about one message a second in
// a private chat and twenty a minute in a group, so edits in a group are
// spaced three times as far apart.
const groupEditFactor = 3

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

// Capabilities: Telegram edits messages (flood control allows about one a
// second in a private chat, fewer in groups; the pacer holds each chat to
// that and waits out a 429), has inline keyboards but no select menus
// (a multi-select question gets a toggle per option and Done), and
// deletes the bot's posts. EditInterval gives a streamed reply half a
// private chat's budget; in a group the pacer spaces it further.
func (a *Adapter) Capabilities() platform.Capabilities {
	c := platform.Abilities(a)
	c.MessageLimit = splitLimit - 200
	c.EditRate = platform.EditRate{Interval: a.cfg.EditInterval} // three times it in a group: editSpacing
	c.EditInterval = 2 * a.cfg.EditInterval
	c.MultiSelect = false
	c.OptionLabelLimit = optionLabelLimit
	return c
}

// EditReply makes msgs show text as Send would post it: a part a message
// already shows is left alone, a changed one is edited (paced per chat; a
// newer edit of the same message replaces one that waits), and parts
// beyond msgs are posted after them.
func (a *Adapter) EditReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string) ([]platform.Target, error) {
	return a.replies.EditReply(ctx, to, msgs, text)
}

// postPart posts one part as Send does: HTML, or plain text when Telegram
// refuses the HTML; the first replies to to's message.
func (a *Adapter) postPart(ctx context.Context, to platform.Target, part string, first bool) (platform.Target, error) {
	params := a.messageParams(to)
	params["text"] = toHTML(part)
	params["parse_mode"] = "HTML"
	params["disable_web_page_preview"] = "true"
	if first && to.MessageID != "" {
		params["reply_to_message_id"] = bareMessageID(to.MessageID)
		params["allow_sending_without_reply"] = "true"
	}
	id, err := a.sendMessage(ctx, params)
	if isParseError(err) {
		delete(params, "parse_mode")
		params["text"] = noMentions(part)
		id, err = a.sendMessage(ctx, params)
	}
	if err != nil {
		return platform.Target{}, err
	}
	return platform.Target{Platform: a.cfg.Name, Channel: params["chat_id"], Thread: to.Thread, MessageID: strconv.Itoa(id)}, nil
}

// Delete removes one of the bot's messages; one already gone is fine.
func (a *Adapter) Delete(ctx context.Context, msg platform.Target) error {
	id := bareMessageID(msg.MessageID)
	_, err := a.call(ctx, "deleteMessage", tgbotapi.Params{"chat_id": msg.Channel, "message_id": id})
	var ae *APIError
	if err != nil && !(errors.As(err, &ae) && strings.Contains(ae.Description, "message to delete not found")) {
		return fmt.Errorf("deleting message %s in %s: %w", id, msg.Channel, err)
	}
	a.replies.Forget(msg)
	return nil
}

// AskQuestions posts Claude's questions with an inline keyboard: a row per
// option of each open question (for a multi-select question a toggle
// showing ☑ or ☐, and Done), then Dismiss. Text over one message goes
// first as messages of its own; the keyboard goes under the last part.
func (a *Adapter) AskQuestions(ctx context.Context, to platform.Target, p platform.QuestionPrompt) (platform.Target, error) {
	parts, markup, err := a.questionMessage(p)
	if err != nil {
		return platform.Target{}, fmt.Errorf("asking questions in %s: %w", to.Channel, err)
	}
	for i, part := range parts[:len(parts)-1] {
		if _, err := a.postPart(ctx, to, part, false); err != nil {
			return platform.Target{}, fmt.Errorf("asking questions in %s: part %d/%d: %w", to.Channel, i+1, len(parts), err)
		}
	}
	params := a.messageParams(to)
	params["text"] = toHTML(parts[len(parts)-1])
	params["parse_mode"] = "HTML"
	params["disable_web_page_preview"] = "true"
	params["reply_markup"] = markup
	id, err := a.sendMessage(ctx, params)
	if err != nil {
		return platform.Target{}, fmt.Errorf("asking questions in %s: %w", to.Channel, err)
	}
	return platform.Target{Platform: a.cfg.Name, Channel: params["chat_id"], Thread: to.Thread, MessageID: strconv.Itoa(id)}, nil
}

// UpdateQuestions redraws the prompt's message with p's state: answered
// questions lose their buttons, a closed prompt all of them. When the text
// is over one message, the prompt's message shows its last part as it is
// now.
func (a *Adapter) UpdateQuestions(ctx context.Context, prompt platform.Target, p platform.QuestionPrompt) error {
	parts, markup, err := a.questionMessage(p)
	if err != nil {
		return fmt.Errorf("updating questions in %s: %w", prompt.Channel, err)
	}
	id := bareMessageID(prompt.MessageID)
	key := prompt.Channel + ":" + id
	err = a.edits.Do(ctx, key, prompt.Channel, "questions", func(ctx context.Context) error {
		return a.editMessage(ctx, prompt.Channel, id, toHTML(parts[len(parts)-1]), markup)
	})
	if err != nil && !isNotModified(err) {
		return fmt.Errorf("updating questions in %s: %w", prompt.Channel, err)
	}
	return nil
}

// questionMessage renders a prompt: its text in parts and the keyboard's
// JSON (an empty keyboard once nothing is open).
func (a *Adapter) questionMessage(p platform.QuestionPrompt) ([]string, string, error) {
	if p.RequestID == "" {
		return nil, "", errors.New("the prompt has no request id")
	}
	ref := a.promptRefs.QuestionRef(p.RequestID)
	var texts []string
	if strings.TrimSpace(p.Intro) != "" {
		texts = append(texts, p.Intro)
	}
	open := p.Outcome == ""
	rows := [][]tgbotapi.InlineKeyboardButton{}
	button := func(label string, c platform.Choice, q, o int) tgbotapi.InlineKeyboardButton {
		return tgbotapi.NewInlineKeyboardButtonData(label, permbutton.QuestionData(c, q, o, ref))
	}
	for qi, q := range p.Questions {
		texts = append(texts, q.Text)
		if !open || q.Done || len(q.Options) == 0 {
			continue
		}
		if qi > 9 || len(q.Options) > 10 {
			return nil, "", fmt.Errorf("question %d has more options or questions than a button can name", qi+1)
		}
		for oi, o := range q.Options {
			label, c := optionLabel(o.Label), platform.ChoiceAnswer
			if q.MultiSelect {
				c, label = platform.ChoiceToggle, "☐ "+label
				if q.Selected.Has(oi) {
					label = "☑ " + optionLabel(o.Label)
				}
			}
			rows = append(rows, tgbotapi.NewInlineKeyboardRow(button(label, c, qi, oi)))
		}
		if q.MultiSelect {
			rows = append(rows, tgbotapi.NewInlineKeyboardRow(button("✔ Done", platform.ChoiceSubmit, qi, 0)))
		}
	}
	if len(rows) > 0 {
		rows = append(rows, tgbotapi.NewInlineKeyboardRow(button("Dismiss", platform.ChoiceDismiss, 0, 0)))
	}
	if !open {
		texts = append(texts, "_"+p.Outcome+"_")
	}
	text := strings.Join(texts, "\n\n")
	if strings.TrimSpace(text) == "" {
		return nil, "", errors.New("the prompt has nothing to show")
	}
	markup, err := json.Marshal(tgbotapi.InlineKeyboardMarkup{InlineKeyboard: rows})
	if err != nil {
		return nil, "", err
	}
	return splitForTelegram(text), string(markup), nil
}

// optionLabel is an option's label on one line within optionLabelLimit.
func optionLabel(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "…"
	}
	if r := []rune(s); len(r) > optionLabelLimit {
		return string(r[:optionLabelLimit-1]) + "…"
	}
	return s
}

// questionPress reads a press of a question's button.
func questionPress(data string) (c platform.Choice, q int, opts platform.OptionSet, ref string, ok bool) {
	c, q, o, ref, ok := permbutton.DecodeQuestion(data)
	if !ok {
		return "", 0, 0, "", false
	}
	if c == platform.ChoiceAnswer || c == platform.ChoiceToggle {
		opts = platform.Options(o)
	}
	return c, q, opts, ref, true
}

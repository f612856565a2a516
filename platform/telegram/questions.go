package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/permbutton"
)

// Claude's questions on Telegram, on an inline keyboard.

// optionLabelLimit keeps an option's button readable on a phone; the
// whole option is in the prompt's text.
const optionLabelLimit = 40

// askQuestions posts Claude's questions with an inline keyboard: a row per
// option of each open question (for a multi-select question a toggle
// showing ☑ or ☐, and Done), then Dismiss. Text over one message goes
// first as messages of its own; the keyboard goes under the last part.
func (ps *prompts) askQuestions(ctx context.Context, to platform.Target, p platform.QuestionPrompt) (platform.Target, error) {
	parts, markup, err := ps.questionMessage(p)
	if err != nil {
		return platform.Target{}, fmt.Errorf("asking questions in %s: %w", to.Channel, err)
	}
	for i, part := range parts[:len(parts)-1] {
		if _, err := ps.wire.postPart(ctx, to, part, false); err != nil {
			return platform.Target{}, fmt.Errorf("asking questions in %s: part %d/%d: %w", to.Channel, i+1, len(parts), err)
		}
	}
	params := ps.wire.messageParams(to)
	params["text"] = toHTML(parts[len(parts)-1])
	params["parse_mode"] = "HTML"
	params["disable_web_page_preview"] = "true"
	params["reply_markup"] = markup
	id, err := ps.wire.sendMessage(ctx, params)
	if err != nil {
		return platform.Target{}, fmt.Errorf("asking questions in %s: %w", to.Channel, err)
	}
	return platform.Target{Platform: ps.name, Channel: params["chat_id"], Thread: to.Thread, MessageID: strconv.Itoa(id)}, nil
}

// updateQuestions redraws the prompt's message with p's state: answered
// questions lose their buttons, a closed prompt all of them. When the text
// is over one message, the prompt's message shows its last part as it is
// now.
func (ps *prompts) updateQuestions(ctx context.Context, prompt platform.Target, p platform.QuestionPrompt) error {
	parts, markup, err := ps.questionMessage(p)
	if err != nil {
		return fmt.Errorf("updating questions in %s: %w", prompt.Channel, err)
	}
	id := bareMessageID(prompt.MessageID)
	key := prompt.Channel + ":" + id
	err = ps.wire.edits.Do(ctx, key, prompt.Channel, "questions", func(ctx context.Context) error {
		return ps.wire.editMessage(ctx, prompt.Channel, id, toHTML(parts[len(parts)-1]), markup)
	})
	if err != nil && !isNotModified(err) {
		return fmt.Errorf("updating questions in %s: %w", prompt.Channel, err)
	}
	return nil
}

// questionMessage renders a prompt: its text in parts and the keyboard's
// JSON (an empty keyboard once nothing is open).
func (ps *prompts) questionMessage(p platform.QuestionPrompt) ([]string, string, error) {
	if p.RequestID == "" {
		return nil, "", errors.New("the prompt has no request id")
	}
	ref := ps.refs.QuestionRef(p.RequestID)
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

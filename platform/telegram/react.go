package telegram

import (
	"context"
	"encoding/json"
	"fmt"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/cc-connect/cc-connect/platform"
)

// reactionEmoji maps the engine's neutral names to emoji that Telegram
// accepts as bot reactions (a fixed set: there is no ✅ or ❌, so success
// and failure show as 👍 and 👎).
var reactionEmoji = map[string]string{
	"eyes":             "👀",
	"white_check_mark": "👍",
	"x":                "👎",
	"thumbsup":         "👍",
	"thumbsdown":       "👎",
	"tada":             "🎉",
	"fire":             "🔥",
	"pray":             "🙏",
	"thinking_face":    "🤔",
}

// react sets the bot's reaction on a message (setMessageReaction).
func (w *wire) react(ctx context.Context, msg platform.Target, name string) error {
	e, ok := reactionEmoji[name]
	if !ok {
		return fmt.Errorf("telegram react: %q has no Telegram reaction", name)
	}
	id := bareMessageID(msg.MessageID)
	if err := w.setReaction(ctx, msg.Channel, id, []map[string]string{{"type": "emoji", "emoji": e}}); err != nil {
		return fmt.Errorf("reacting %s to %s in %s: %w", name, id, msg.Channel, err)
	}
	w.reactions.Put(msg.Channel+":"+id, name)
	return nil
}

// unreact removes the bot's reaction if it is still name.
func (w *wire) unreact(ctx context.Context, msg platform.Target, name string) error {
	id := bareMessageID(msg.MessageID)
	key := msg.Channel + ":" + id
	if cur, _ := w.reactions.Get(key); cur != name {
		return nil // replaced by a later reaction, or never set
	}
	if err := w.setReaction(ctx, msg.Channel, id, []map[string]string{}); err != nil {
		return fmt.Errorf("removing reaction %s from %s in %s: %w", name, id, msg.Channel, err)
	}
	w.reactions.Put(key, "")
	return nil
}

func (w *wire) setReaction(ctx context.Context, chat, id string, reaction []map[string]string) error {
	b, err := json.Marshal(reaction)
	if err != nil {
		return err
	}
	_, err = w.api.call(ctx, "setMessageReaction", tgbotapi.Params{"chat_id": chat, "message_id": id, "reaction": string(b)})
	return err
}

package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

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

// reactions remembers the one reaction the bot holds on each message:
// Telegram gives a bot a single reaction per message, so a new one replaces
// the old, and removing a reaction that was already replaced must not
// clear its successor. Bounded, oldest forgotten first.
type reactions struct {
	mu      sync.Mutex // guards current and order
	max     int
	current map[string]string // "chat:message" -> reaction name
	order   []string
}

func newReactions(max int) *reactions {
	return &reactions{max: max, current: make(map[string]string)}
}

func (r *reactions) set(key, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.current[key]; !ok {
		r.order = append(r.order, key)
	}
	r.current[key] = name
	for len(r.order) > r.max {
		delete(r.current, r.order[0])
		r.order = r.order[1:]
	}
}

func (r *reactions) get(key string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current[key]
}

// React sets the bot's reaction on a message (setMessageReaction).
func (a *Adapter) React(ctx context.Context, msg platform.Target, name string) error {
	e, ok := reactionEmoji[name]
	if !ok {
		return fmt.Errorf("telegram react: %q has no Telegram reaction", name)
	}
	id := bareMessageID(msg.MessageID)
	if err := a.setReaction(ctx, msg.Channel, id, []map[string]string{{"type": "emoji", "emoji": e}}); err != nil {
		return fmt.Errorf("reacting %s to %s in %s: %w", name, id, msg.Channel, err)
	}
	a.reactions.set(msg.Channel+":"+id, name)
	return nil
}

// Unreact removes the bot's reaction if it is still name.
func (a *Adapter) Unreact(ctx context.Context, msg platform.Target, name string) error {
	id := bareMessageID(msg.MessageID)
	key := msg.Channel + ":" + id
	if a.reactions.get(key) != name {
		return nil // replaced by a later reaction, or never set
	}
	if err := a.setReaction(ctx, msg.Channel, id, []map[string]string{}); err != nil {
		return fmt.Errorf("removing reaction %s from %s in %s: %w", name, id, msg.Channel, err)
	}
	a.reactions.set(key, "")
	return nil
}

func (a *Adapter) setReaction(ctx context.Context, chat, id string, reaction []map[string]string) error {
	b, err := json.Marshal(reaction)
	if err != nil {
		return err
	}
	_, err = a.call(ctx, "setMessageReaction", tgbotapi.Params{"chat_id": chat, "message_id": id, "reaction": string(b)})
	return err
}

package telegram

import (
	"context"
	"strconv"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/replykit"
)

// A reply posted so that a restart posts again only what did not land.
// Telegram's Bot API can neither tag a message nor list a chat's messages,
// so the adapter cannot find what it posted: it is a platform.PartRecorder,
// telling the engine of each part as it lands (Reply.Landed) and skipping
// the parts the engine's journal names (Reply.Done). A part posted just
// before a kill, before its record was written, is posted again: the
// window is that one write.

var _ replykit.Wire = replyWire{}

// replyWire is what the reply kit needs of Telegram: parts under its
// limit, sendMessage (the first part replying to the message answered) and
// editMessageText, each noted in the adapter's history.
type replyWire struct{ w *wire }

func (w replyWire) Split(text string) []string { return splitForTelegram(text) }

func (w replyWire) Post(ctx context.Context, to platform.Target, p replykit.Part) (platform.Target, error) {
	at := to
	if at.MessageID == "" {
		at.MessageID = p.After
	}
	m, err := w.w.postPart(ctx, at, p.Text, p.Index == 0)
	if err != nil {
		return m, err
	}
	if id, err := strconv.Atoi(m.MessageID); err == nil {
		w.w.seen.noteSent(to, id, p.Text)
	}
	return m, nil
}

// Edit is the adapter's Edit (wire.edit), paced per chat; an edit cannot be tagged,
// so a final one is like any other.
func (w replyWire) Edit(ctx context.Context, msg platform.Target, p replykit.Part, _ bool) error {
	return w.w.edit(ctx, msg, p.Text)
}

func (w replyWire) ShownKey(msg platform.Target) string {
	return msg.Channel + ":" + bareMessageID(msg.MessageID)
}

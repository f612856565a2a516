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

var (
	_ platform.PartRecorder  = (*Adapter)(nil)
	_ platform.ReplyFinisher = (*Adapter)(nil)
	_ replykit.Wire          = replyWire{}
)

// RecordsParts says the engine must record each part (platform.PartRecorder).
func (a *Adapter) RecordsParts() {}

// SendReply posts text as Send does, the first part replying to r.After,
// skipping the parts r.Done names and calling r.Landed after each part.
// r.Key and r.Again change nothing: Telegram has no way to tag or find a
// post.
func (a *Adapter) SendReply(ctx context.Context, to platform.Target, text string, r platform.Reply) (platform.ReplyResult, error) {
	return a.replies.SendReply(ctx, to, text, r)
}

// FinishReply makes the streamed messages msgs show the reply
// (platform.ReplyFinisher): each gets its part through editMessageText (an
// edit to what it shows already is "not modified", which is fine, so that
// recovery can apply it again), and the parts beyond msgs are posted as
// SendReply posts them, r.Done and r.Landed applying. The edits keep the
// chat's spacing: it is Telegram's own limit (about one message a second in
// a chat, twenty a minute in a group), not a pacing of the stream's.
func (a *Adapter) FinishReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string, r platform.Reply) ([]platform.Target, error) {
	return a.replies.FinishReply(ctx, to, msgs, text, r)
}

// replyWire is what the reply kit needs of Telegram: parts under its
// limit, sendMessage (the first part replying to the message answered) and
// editMessageText, each noted in the adapter's history.
type replyWire struct{ a *Adapter }

func (w replyWire) Split(text string) []string { return splitForTelegram(text) }

func (w replyWire) Post(ctx context.Context, to platform.Target, p replykit.Part) (platform.Target, error) {
	at := to
	if at.MessageID == "" {
		at.MessageID = p.After
	}
	m, err := w.a.postPart(ctx, at, p.Text, p.Index == 0)
	if err != nil {
		return m, err
	}
	if id, err := strconv.Atoi(m.MessageID); err == nil {
		w.a.noteSent(to, id, p.Text)
	}
	return m, nil
}

// Edit is the adapter's Edit, paced per chat; an edit cannot be tagged,
// so a final one is like any other.
func (w replyWire) Edit(ctx context.Context, msg platform.Target, p replykit.Part, _ bool) error {
	return w.a.Edit(ctx, msg, p.Text)
}

func (w replyWire) ShownKey(msg platform.Target) string {
	return msg.Channel + ":" + bareMessageID(msg.MessageID)
}

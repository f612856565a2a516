package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cc-connect/cc-connect/platform"
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
)

// RecordsParts says the engine must record each part (platform.PartRecorder).
func (a *Adapter) RecordsParts() {}

// SendReply posts text as Send does, the first part replying to r.After,
// skipping the parts r.Done names and calling r.Landed after each part.
// r.Key and r.Again change nothing: Telegram has no way to tag or find a
// post.
func (a *Adapter) SendReply(ctx context.Context, to platform.Target, text string, r platform.Reply) (platform.ReplyResult, error) {
	res := platform.ReplyResult{Last: platform.Target{Platform: a.cfg.Name, Channel: to.Channel, Thread: to.Thread}}
	if strings.TrimSpace(text) == "" {
		return res, errors.New("telegram send: empty text")
	}
	if to.MessageID == "" {
		to.MessageID = r.After
	}
	parts := splitForTelegram(text)
	res.Parts = len(parts)
	for i := range parts {
		if r.Done != nil && r.Done(i) {
			continue
		}
		m, err := a.replyPart(ctx, to, parts, i, r)
		if err != nil {
			return res, err
		}
		res.Posted++
		res.Last = m
	}
	return res, nil
}

// replyPart posts part i of a reply and tells r.Landed.
func (a *Adapter) replyPart(ctx context.Context, to platform.Target, parts []string, i int, r platform.Reply) (platform.Target, error) {
	m, err := a.postPart(ctx, to, parts[i], i == 0)
	if err != nil {
		return m, fmt.Errorf("sending part %d/%d to %s: %w", i+1, len(parts), to.Channel, err)
	}
	a.shown.Put(m.Channel+":"+m.MessageID, parts[i])
	if id, err := strconv.Atoi(m.MessageID); err == nil {
		a.noteSent(to, id, parts[i])
	}
	if r.Landed != nil {
		r.Landed(i, len(parts))
	}
	return m, nil
}

// FinishReply makes the streamed messages msgs show the reply
// (platform.ReplyFinisher): each gets its part through editMessageText (an
// edit to what it shows already is "not modified", which is fine, so that
// recovery can apply it again), and the parts beyond msgs are posted as
// SendReply posts them, r.Done and r.Landed applying. The edits keep the
// chat's spacing: it is Telegram's own limit (about one message a second in
// a chat, twenty a minute in a group), not a pacing of the stream's.
func (a *Adapter) FinishReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string, r platform.Reply) ([]platform.Target, error) {
	if strings.TrimSpace(text) == "" {
		return msgs, errors.New("telegram edit: empty text")
	}
	if to.MessageID == "" {
		to.MessageID = r.After
	}
	parts := splitForTelegram(text)
	out := make([]platform.Target, 0, len(parts))
	for i, part := range parts {
		if i < len(msgs) {
			m := msgs[i]
			if err := a.Edit(ctx, m, part); err != nil {
				return out, err
			}
			a.shown.Put(m.Channel+":"+bareMessageID(m.MessageID), part)
			out = append(out, m)
			continue
		}
		if r.Done != nil && r.Done(i) {
			continue
		}
		m, err := a.replyPart(ctx, to, parts, i, r)
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
	return out, nil
}

package conv

import (
	"context"

	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/platform"
)

// The relay's side of what a running turn shows: what the platform can do,
// Claude's questions, and the reply edited in place as it is written.

// caps is what the conversation's platform can do.
func (r *relay) caps() platform.Capabilities { return platform.CapabilitiesOf(r.chat()) }

// askQuestions posts a question prompt with buttons; false when the
// platform has none or the post failed (the caller posts a list).
func (r *relay) askQuestions(p platform.QuestionPrompt) (platform.Target, bool) {
	qa, ok := r.chat().(platform.QuestionAsker)
	if !ok || !r.caps().Buttons {
		return platform.Target{}, false
	}
	ctx, cancel := context.WithTimeout(r.bg, sendTimeout)
	defer cancel()
	posted, err := qa.AskQuestions(ctx, r.to, p)
	if err != nil {
		r.metrics.PlatformError(r.to.Platform)
		r.log.Warn("Posting Claude's questions failed; posting them as a list", "error", err)
		return platform.Target{}, false
	}
	return posted, true
}

// updateQuestions redraws a posted question prompt.
func (r *relay) updateQuestions(prompt platform.Target, p platform.QuestionPrompt) {
	qa, ok := r.chat().(platform.QuestionAsker)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.bg, sendTimeout)
	defer cancel()
	if err := qa.UpdateQuestions(ctx, prompt, p); err != nil {
		r.log.Warn("Updating Claude's questions failed", "error", err)
	}
}

// editReply makes msgs show text (platform.ReplyEditor); ok is false when
// the platform cannot, and the returned messages are those that hold a
// part.
func (r *relay) editReply(msgs []platform.Target, text string) ([]platform.Target, bool) {
	re, ok := r.chat().(platform.ReplyEditor)
	if !ok {
		return msgs, false
	}
	ctx, cancel := context.WithTimeout(r.bg, sendTimeout)
	defer cancel()
	out, err := re.EditReply(ctx, r.to, msgs, text)
	if err != nil {
		r.metrics.PlatformError(r.to.Platform)
		r.log.Warn("Editing the reply in place failed", "error", err)
		return out, false
	}
	return out, true
}

// deleteMsg deletes one of the bot's messages; false when the platform
// cannot or the delete failed.
func (r *relay) deleteMsg(m platform.Target) bool {
	d, ok := r.chat().(platform.Deleter)
	if !ok {
		return false
	}
	ctx, cancel := context.WithTimeout(r.bg, sendTimeout)
	defer cancel()
	if err := d.Delete(ctx, m); err != nil {
		r.log.Warn("Deleting a message failed", "error", err)
		return false
	}
	return true
}

// finishReply makes the streamed messages msgs show the reply text for
// good (platform.ReplyFinisher: tagged, not behind the stream's pacing,
// parts beyond msgs posted as a reply is); an adapter without it gets the
// text through EditReply. ok is false when that failed; the returned
// messages are those that hold a part.
func (r *relay) finishReply(msgs []platform.Target, text string, rp platform.Reply) ([]platform.Target, bool) {
	f, ok := r.chat().(platform.ReplyFinisher)
	if !ok {
		return r.editReply(msgs, text)
	}
	to := r.to
	to.MessageID = ""
	ctx, cancel := context.WithTimeout(r.bg, sendTimeout)
	defer cancel()
	out, err := f.FinishReply(ctx, to, msgs, text, rp)
	if err != nil {
		r.metrics.PlatformError(r.to.Platform)
		r.log.Warn("Finishing the streamed reply failed", "error", err)
		return out, false
	}
	return out, true
}

// canFinish reports whether the adapter edits a streamed reply into the
// reply (platform.ReplyFinisher), so that recovery can finish one again.
func (r *relay) canFinish() bool {
	_, ok := r.chat().(platform.ReplyFinisher)
	return ok
}

// dropStream deletes streamed messages the final text does not use; a
// platform without deletes gets them marked as superseded.
func (r *relay) dropStream(msgs []platform.Target) {
	for _, m := range msgs {
		if r.deleteMsg(m) {
			continue
		}
		if ed, ok := r.chat().(platform.Editor); ok {
			_ = ed.Edit(r.bg, m, render.SeeBelow)
		}
	}
}

// cutStream marks the messages a reply was streamed into before a restart,
// when no final text goes to them (the turn runs again, or its reply is
// lost): they would otherwise read as a reply, partial and ending in "…".
// done runs once they are marked: the messages are done with, and a kill
// during the turn that answers now must not finish its reply in them.
func (r *relay) cutStream(msgs []platform.Target, done func()) {
	ed, ok := r.chat().(platform.Editor)
	if !ok || len(msgs) == 0 {
		return
	}
	for _, m := range msgs {
		ctx, cancel := context.WithTimeout(r.bg, sendTimeout)
		if err := ed.Edit(ctx, m, render.CutOffText); err != nil {
			r.log.Warn("Marking a cut-off streamed reply failed", "error", err)
		}
		cancel()
	}
	done()
}

package conv

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/cc-connect/cc-connect/platform"
)

// sendTimeout bounds one post, so that an adapter that stopped answering
// cannot hold a session (and so shutdown) forever; generous for
// rate-limited splits.
const sendTimeout = 2 * time.Minute

// relay is a conversation's side of the chat: it posts through the adapter
// registered for its platform now, reacts on the user's messages, keeps a
// turn's progress message and posts permission prompts. Each call is one
// platform call, bounded; the session goroutine makes them (a side
// question's and a !sh's goroutines post their answer too). It holds no
// state of the conversation.
type relay struct {
	to       platform.Target // replies go here (MessageID empty)
	original platform.Adapter
	current  func(name string) (platform.Adapter, bool)
	bg       context.Context
	log      *slog.Logger
	metrics  Metrics
}

// chat is the adapter the conversation is served through: the one
// registered under its platform's name now, so that once a reload replaced
// it (new credentials, say), a turn that was already running posts its
// reply, prompts and reactions through the new one. A platform removed by
// a reload keeps the adapter the session started with.
func (r *relay) chat() platform.Adapter {
	if a, ok := r.current(r.to.Platform); ok {
		return a
	}
	return r.original
}

// send posts text to the conversation.
func (r *relay) send(text string) platform.Target { return r.sendTo(r.to, text) }

// sendTo posts text to to (a thread of the conversation's platform).
func (r *relay) sendTo(to platform.Target, text string) platform.Target {
	to.MessageID = ""
	ctx, cancel := context.WithTimeout(r.bg, sendTimeout)
	defer cancel()
	posted, err := r.chat().Send(ctx, to, text)
	if err != nil {
		r.metrics.PlatformError(to.Platform)
		r.log.Error("Posting to the chat failed", "error", err)
	}
	return posted
}

// sendReply posts a turn's reply. Through an adapter that is a
// platform.Replier every part carries key (the uuid the message was
// journaled and sent to claude with), so that the reply can be found on
// the platform again; with again (the reply may have been posted, wholly
// or in part, before a restart) the adapter first looks for its parts and
// posts only the others. after is the message the reply answers. Other
// adapters post it with Send.
func (r *relay) sendReply(text string, rp0 platform.Reply) platform.ReplyResult {
	rp, ok := r.chat().(platform.Replier)
	if !ok || rp0.Key == "" {
		return platform.ReplyResult{Last: r.send(text), Parts: 1, Posted: 1}
	}
	to := r.to
	to.MessageID = ""
	ctx, cancel := context.WithTimeout(r.bg, sendTimeout)
	defer cancel()
	res, err := rp.SendReply(ctx, to, text, rp0)
	if err != nil {
		r.metrics.PlatformError(to.Platform)
		r.log.Error("Posting the reply failed", "error", err, "parts", res.Parts, "posted", res.Posted)
	}
	if res.Found > 0 {
		r.log.Info("Reply found posted before the restart", "parts", res.Parts, "found", res.Found, "posted", res.Posted)
	}
	// Which host posted which reply, when: what a doubled reply is traced by.
	r.log.Debug("Reply sent", "reply_key", rp0.Key, "again", rp0.Again, "parts", res.Parts, "found", res.Found,
		"posted", res.Posted, "message_id", res.Last.MessageID)
	return res
}

// canFindReplies reports whether the adapter can tell which parts of a
// reply it posted before a restart (a platform.Replier that tags its
// posts, not a PartRecorder).
func (r *relay) canFindReplies() bool {
	_, ok := r.chat().(platform.Replier)
	return ok && !r.recordsParts()
}

// recordsParts reports whether the adapter relies on the engine to write
// down each part of a reply as it lands (platform.PartRecorder).
func (r *relay) recordsParts() bool {
	_, ok := r.chat().(platform.PartRecorder)
	return ok
}

// turnStarted shows that the agent is on m: typing and an "eyes" reaction.
func (r *relay) turnStarted(m platform.Message) {
	if ty, ok := r.chat().(platform.Typer); ok {
		if err := ty.Typing(r.bg, r.to); err != nil {
			r.log.Debug("Typing indicator failed", "error", err)
		}
	}
	if re, ok := r.chat().(platform.Reactor); ok && m.Target.MessageID != "" {
		if err := re.React(r.bg, m.Target, "eyes"); err != nil {
			r.log.Debug("Reaction failed", "error", err)
		}
	}
}

// turnEnded swaps the "eyes" for a check mark, or a cross when the turn
// failed.
func (r *relay) turnEnded(m platform.Message, ok bool) {
	re, isReactor := r.chat().(platform.Reactor)
	if !isReactor || m.Target.MessageID == "" {
		return
	}
	_ = re.Unreact(r.bg, m.Target, "eyes")
	name := "white_check_mark"
	if !ok {
		name = "x"
	}
	if err := re.React(r.bg, m.Target, name); err != nil {
		r.log.Debug("Reaction failed", "error", err)
	}
}

// progress is the status message of a running turn, edited in place at
// most once a second.
type progress struct {
	msg      platform.Target
	posted   bool
	lastEdit time.Time
	pending  string
	timer    *time.Timer
}

func (p *progress) stop() {
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
}

// showProgress posts or edits the turn's progress message, or hands it to
// the platform's own status line (platform.StatusLiner). Without either
// it posts nothing: progress would flood the chat.
func (r *relay) showProgress(p *progress, text string) {
	if sl, ok := r.chat().(platform.StatusLiner); ok {
		// A status line of its own: no message to pace, each status
		// replaces the last at once.
		if err := sl.ShowStatus(r.bg, r.to, text); err != nil {
			r.log.Debug("Showing the status line failed", "error", err)
		}
		return
	}
	ed, ok := r.chat().(platform.Editor)
	if !ok {
		return
	}
	if !p.posted {
		p.msg = r.send(text)
		p.posted, p.lastEdit = true, time.Now()
		return
	}
	if wait := time.Second - time.Since(p.lastEdit); wait > 0 {
		p.pending = text
		if p.timer == nil {
			p.timer = time.NewTimer(wait)
		}
		return
	}
	p.lastEdit = time.Now()
	if err := ed.Edit(r.bg, p.msg, text); err != nil {
		r.log.Debug("Editing the progress message failed", "error", err)
	}
}

// flushProgress posts the edit that waited for its second.
func (r *relay) flushProgress(p *progress) {
	p.timer = nil
	if p.pending == "" {
		return
	}
	text := p.pending
	p.pending = ""
	p.lastEdit = time.Now()
	if ed, ok := r.chat().(platform.Editor); ok {
		if err := ed.Edit(r.bg, p.msg, text); err != nil {
			r.log.Debug("Editing the progress message failed", "error", err)
		}
	}
}

// askPermission posts a permission prompt with buttons, when the platform
// has them; false when it has not or the post failed (the caller falls
// back to text).
func (r *relay) askPermission(pp platform.PermissionPrompt) (platform.Target, bool) {
	pr, ok := r.chat().(platform.Prompter)
	if !ok {
		return platform.Target{}, false
	}
	posted, err := pr.AskPermission(r.bg, r.to, pp)
	if err != nil {
		r.log.Warn("Posting the permission prompt failed; falling back to text", "error", err)
		return platform.Target{}, false
	}
	return posted, true
}

// resolvePermission shows how a prompt posted with buttons ended.
func (r *relay) resolvePermission(prompt platform.Target, outcome string) {
	pr, ok := r.chat().(platform.Prompter)
	if !ok {
		return
	}
	if err := pr.ResolvePermission(r.bg, prompt, outcome); err != nil {
		r.log.Warn("Resolving the permission prompt failed", "error", err)
	}
}

// platformStatus is the adapter's connection state as !status shows it,
// "" when it reports none.
func (r *relay) platformStatus() string {
	if st, ok := r.chat().(platform.Statuser); ok {
		return st.Status().String()
	}
	return ""
}

// opener is how a journaled attachment is fetched again (its Ref), nil
// when the adapter cannot.
func (r *relay) opener() func(ctx context.Context, a platform.Attachment) (io.ReadCloser, error) {
	if o, ok := r.chat().(platform.AttachmentOpener); ok {
		return o.OpenAttachment
	}
	return nil
}

// nameTimeout bounds reading a user's display name.
const nameTimeout = 5 * time.Second

// userName is the display name of m's sender: the one the event carried,
// else the one the adapter reads (platform.UserNamer, cached there).
func (r *relay) userName(m platform.Message) string {
	n, ok := r.chat().(platform.UserNamer)
	if m.UserName != "" || m.UserID == "" || !ok {
		return m.UserName
	}
	ctx, cancel := context.WithTimeout(r.bg, nameTimeout)
	defer cancel()
	return n.UserName(ctx, m.UserID)
}

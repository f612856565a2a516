package conv

import (
	"log/slog"
	"slices"
	"strings"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/ctxindicator"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/platform"
)

// What a finished turn posts: its reply, with the context figure (or, for
// a !compact, how the compaction went). Running the turn is turn.go's.

// postReply posts the turn's reply: the result text (or the turn's
// assistant text), the self-report marker stripped, the context indicator
// appended. The journal notes first that the reply is being posted, so
// that recovery after a crash knows it may have reached the chat; each
// part carries the message's journaled uuid where the adapter can tag a
// post (relay.sendReply), so that recovery can find what landed.
func (tr *turnRunner) postReply(it workItem, out outcome) {
	if out.compaction {
		tr.jr.markReplying(it, nil, "")
		if tr.settleFirst(it, "", nil) {
			tr.reportCompaction(out)
			tr.jr.replyPosted(it)
		}
		return
	}
	res := out.res
	text := res.Text
	if text == "" {
		text = out.text
	}
	if res.IsError && text == "" && len(res.Errors) > 0 {
		text = "Agent error: " + strings.Join(res.Errors, "; ")
	}
	authFailed := res.AuthFailed()
	if authFailed {
		text = render.LoginNeeded(text)
	}
	if strings.HasPrefix(res.TerminalReason, "aborted") {
		text = "Stopped."
		if tr.e.isStopping() {
			text = "Stopped: cc-connect is shutting down. Send the message again once it is back."
		}
	}
	clean, self, hasSelf := ctxindicator.StripSelfReport(text)
	tr.rb.change(func(r *Record) { // saved by settle, after the post
		r.LoginFailed = authFailed
		// A turn without a marker clears track B: an old estimate would
		// show a drift that no longer exists.
		r.SelfPct, r.HasSelfPct = self, hasSelf
	})
	rec := tr.rb.get()
	f := rec.figures()
	if strings.TrimSpace(clean) == "" {
		clean = "(no reply text)"
	}
	pct, ok := f.SDK()
	if res.ContextTokens == 0 {
		ok = false // no usage this turn: never show a stale figure as new
	}
	final := ctxindicator.Append(clean, pct, ok)
	// One write: the reply is being posted, into which streamed messages,
	// and what it carries after Claude's text, so that recovery posts the
	// very same text, into the same messages.
	tr.jr.markReplying(it, streamedMsgs(out.live), strings.TrimPrefix(final, clean))
	// Once settled no host runs the event again: the context that holds
	// its answer is replicated then, before the reply, so that a host
	// killed before the post leaves the binding's next holder the reply
	// (pendingreply.go) and the context it belongs to.
	replicate := func() {
		// A turn of the older context, run while a newer one waits to be
		// placed, is not replicated over the newer one.
		if tr.restoring == nil {
			tr.rep.replicate(tr.e.bg, tr.e.host.Transcripts(), rec.SessionID, tr.ws)
		}
	}
	if !tr.settleFirst(it, final, replicate) {
		return
	}
	if out.live == nil || !out.live.finalReply(final, tr.replyOf(it, false)) {
		tr.chat.sendReply(final, tr.replyOf(it, it.replying))
	}
	// Posted: nobody is to post it again (pendingreply.go).
	tr.jr.replyPosted(it)
	// After the post: the reply is not held up by the copy, nor by the
	// question of what the turn changed (checkpoint.go).
	tr.ck.afterTurn(tr.agent.Live(), out.uuid, rec.SessionID, tr.binding().CheckpointsOn())

	if res.ContextTokens > 0 {
		// tr.log carries session_key and workspace already; LogArgs adds
		// the key too, so the figures line goes through the engine's.
		args := append(f.LogArgs(tr.key), "session_id", rec.SessionID, "workspace", tr.ws)
		level := slog.LevelInfo
		if f.Overflow() {
			level = slog.LevelWarn // the shown figure is clamped: the window is wrong
		}
		tr.e.log.Log(tr.e.bg, level, ctxindicator.LogMessage, args...)
	}
}

// replyOf is how the reply to it is posted: tagged with the uuid it was
// journaled with, after the message it answers, the parts the journal
// names as posted skipped and, where the platform can neither tag nor find
// its posts, each part written down as it lands (one write a part).
func (tr *turnRunner) replyOf(it workItem, again bool) platform.Reply {
	r := platform.Reply{Key: replyKey(it, tr.jr.cl != nil), After: it.msg.Target.MessageID, Again: again}
	if done := slices.Clone(it.parts); len(done) > 0 {
		r.Done = func(part int) bool { return slices.Contains(done, part) }
	}
	if tr.chat.recordsParts() {
		r.Landed = func(part, _ int) { tr.jr.markPart(it, part) }
	}
	return r
}

// settleFirst settles a cluster's event in its stream before anything of
// its reply is posted (the journal says the reply is being posted first);
// false when it was not settled: the binding's next holder runs it and
// posts the reply, once (cluster.go), so nothing more is posted or edited
// here. settled, when set, runs once it is settled, before the post.
func (tr *turnRunner) settleFirst(it workItem, reply string, settled func()) bool {
	if tr.e.killedAt(PointSettling) || !tr.jr.settleFirst(tr.e.bg, it, reply) {
		return false
	}
	if settled != nil {
		settled()
	}
	if tr.e.killedAt(PointSettled) {
		return false
	}
	if !tr.chat.canFindReplies() {
		markPosting(tr.jr, it) // pendingreply.go: what lands is only this host's to know
	}
	return true
}

// reportCompaction posts how a !compact turn went and refreshes the
// context figure from the compaction's own numbers.
func (tr *turnRunner) reportCompaction(out outcome) {
	switch {
	case out.compacted != nil:
		b := out.compacted
		tr.rb.change(func(r *Record) { // saved by settle, after the post
			var reported int64
			if r.WindowReported {
				reported = r.ContextWindow
			}
			if out.res != nil && out.res.ContextWindow() > 0 {
				reported = out.res.ContextWindow()
			}
			f := ctxindicator.NewFigures(b.PostTokens, reported, orDefaultInt(r.ContextWindow, tr.e.opts.ContextWindow))
			r.ContextTokens, r.ContextWindow, r.WindowReported = f.Tokens, f.Window, f.WindowReported
			r.ContextPct, _ = f.SDK()
			r.SelfPct, r.HasSelfPct = 0, false // Claude's estimate predates the summary
		})
		f := tr.rb.get().figures()
		before, _ := ctxindicator.Percent(b.PreTokens, f.Window)
		after, ok := f.SDK()
		text := render.CompactionReport(render.Compaction{Done: true, PreTokens: b.PreTokens, PostTokens: b.PostTokens, BeforePct: before, AfterPct: after})
		tr.log.Info("Conversation compacted", "session_id", tr.rb.sessionID(), "pre_tokens", b.PreTokens,
			"post_tokens", b.PostTokens, "trigger", b.Trigger)
		tr.chat.send(ctxindicator.Append(text, after, ok && b.PostTokens > 0))
	case out.compactErr != "":
		tr.log.Warn("Compaction failed", "session_id", tr.rb.sessionID(), "compact_error", out.compactErr)
		tr.chat.send(render.CompactionReport(render.Compaction{Err: tr.forChat(out.compactErr)}))
	default:
		var c render.Compaction
		if out.res != nil {
			c.Said, c.Errors = out.res.Text, out.res.Errors
		}
		tr.log.Warn("Compaction request ended without a compaction", "session_id", tr.rb.sessionID())
		tr.chat.send(render.CompactionReport(c))
	}
}

// resultFigures builds track A from a turn's result: its ContextTokens
// (the last API call, not the summed result.usage) over the window Claude
// Code reported in modelUsage, else fallbackWindow (0 means
// ctxindicator.DefaultWindow). A nil result gives figures with no token
// data.
func resultFigures(r *agentproc.Result, fallbackWindow int64) ctxindicator.Figures {
	if r == nil {
		return ctxindicator.NewFigures(0, 0, fallbackWindow)
	}
	return ctxindicator.NewFigures(r.ContextTokens, r.ContextWindow(), fallbackWindow)
}

package engine

import (
	"log/slog"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/ctxindicator"
	"github.com/cc-connect/cc-connect/platform"
)

// What a turn shows in the chat: its reply (with the context figure), the
// reactions on the user's message, and the progress message edited while
// it runs. Running the turn itself is turn.go's.

// noteResult takes the figures of a result (session id, context, cost)
// into the record, in memory: settle saves them once the reply is posted,
// so that no fsync delays the reply. The session id was saved when the turn
// started, which is what a crash before that save needs.
func (s *session) noteResult(res *agentproc.Result, initModel string) {
	model := orDefault(res.Model, initModel)
	s.change(func(r *record) {
		if res.SessionID != "" {
			r.SessionID = res.SessionID
		}
		if model != "" {
			r.Model = model
		}
		if res.TotalCostUSD > 0 {
			r.TotalCostUSD = res.TotalCostUSD
		}
		if res.ContextTokens > 0 {
			f := resultFigures(res, s.e.opts.ContextWindow)
			r.ContextTokens, r.ContextWindow, r.WindowReported = f.Tokens, f.Window, f.WindowReported
			r.ContextPct, _ = f.SDK()
		}
		r.LastActivity = s.e.now()
	})
}

// relay posts the turn's reply: the result text (or the turn's assistant
// text), the self-report marker stripped, the context indicator appended.
func (s *session) relay(out outcome) {
	if out.compaction {
		s.reportCompaction(out)
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
	if strings.HasPrefix(res.TerminalReason, "aborted") {
		text = "Stopped."
		if s.e.isStopping() {
			text = "Stopped: cc-connect is shutting down. Send the message again once it is back."
		}
	}
	clean, self, hasSelf := ctxindicator.StripSelfReport(text)
	s.change(func(r *record) { // saved by settle, after the post
		// A turn without a marker clears track B: an old estimate would
		// show a drift that no longer exists.
		r.SelfPct, r.HasSelfPct = self, hasSelf
	})
	s.mu.Lock()
	f := s.rec.figures()
	id := s.rec.SessionID
	s.mu.Unlock()
	if strings.TrimSpace(clean) == "" {
		clean = "(no reply text)"
	}
	pct, ok := f.SDK()
	if res.ContextTokens == 0 {
		ok = false // no usage this turn: never show a stale figure as new
	}
	s.send(s.e.bg, ctxindicator.Append(clean, pct, ok))

	if res.ContextTokens > 0 {
		// s.log already carries session_key, which LogArgs adds too.
		args := append(f.LogArgs(s.key), "session_id", id, "workspace", s.ws.Path)
		level := slog.LevelInfo
		if f.Overflow() {
			level = slog.LevelWarn // the shown figure is clamped: the window is wrong
		}
		s.e.log.Log(s.e.bg, level, ctxindicator.LogMessage, args...)
	}
}

// turnStarted shows that the agent is on it: typing and an "eyes" reaction.
func (s *session) turnStarted(m platform.Message) {
	if ty, ok := s.chat().(platform.Typer); ok {
		if err := ty.Typing(s.e.bg, s.to); err != nil {
			s.log.Debug("Typing indicator failed", "error", err)
		}
	}
	if r, ok := s.chat().(platform.Reactor); ok && m.Target.MessageID != "" {
		if err := r.React(s.e.bg, m.Target, "eyes"); err != nil {
			s.log.Debug("Reaction failed", "error", err)
		}
	}
}

func (s *session) turnEnded(m platform.Message, ok bool) {
	r, isReactor := s.chat().(platform.Reactor)
	if !isReactor || m.Target.MessageID == "" {
		return
	}
	_ = r.Unreact(s.e.bg, m.Target, "eyes")
	name := "white_check_mark"
	if !ok {
		name = "x"
	}
	if err := r.React(s.e.bg, m.Target, name); err != nil {
		s.log.Debug("Reaction failed", "error", err)
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

func (s *session) showProgress(t *turn, text string) {
	ed, ok := s.chat().(platform.Editor)
	if !ok {
		return // without edits, progress would flood the chat
	}
	p := &t.progress
	if !p.posted {
		p.msg = s.send(s.e.bg, text)
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
	if err := ed.Edit(s.e.bg, p.msg, text); err != nil {
		s.log.Debug("Editing the progress message failed", "error", err)
	}
}

func (s *session) flushProgress(t *turn) {
	p := &t.progress
	p.timer = nil
	if p.pending == "" {
		return
	}
	text := p.pending
	p.pending = ""
	p.lastEdit = time.Now()
	if ed, ok := s.chat().(platform.Editor); ok {
		if err := ed.Edit(s.e.bg, p.msg, text); err != nil {
			s.log.Debug("Editing the progress message failed", "error", err)
		}
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

package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/ctxindicator"
	"github.com/cc-connect/cc-connect/platform"
)

// DefaultAllowedModes are the permission modes !mode may set when
// Options.AllowedModes is empty: none of them skips the permission prompts
// for commands.
var DefaultAllowedModes = []string{"default", "acceptEdits", "plan"}

// liveController is what !model and !mode need from a live process;
// *agentproc.Process has it. A process without it (a test fake) gets the
// setting at its next spawn only.
type liveController interface {
	SetModel(ctx context.Context, model string) error
	SetPermissionMode(ctx context.Context, mode string) error
}

var _ liveController = (*agentproc.Process)(nil)

// compactCommand is the text the CLI compacts on when it arrives as a
// stream-json user message (PROTOCOL.md §14).
const compactCommand = "/compact"

// isCompaction reports whether a queued turn is a !compact request. Only
// !compact queues such a text: "/compact" typed in the chat is the command.
func isCompaction(text string) bool {
	return text == compactCommand || strings.HasPrefix(text, compactCommand+" ")
}

func (e *Engine) allowedModes() []string {
	if len(e.opts.AllowedModes) > 0 {
		return e.opts.AllowedModes
	}
	return DefaultAllowedModes
}

// compact queues a manual compaction as the session's next turn:
// the user's answer to a high context figure, never started by itself.
func (e *Engine) compact(ctx context.Context, s *session, m platform.Message, instructions string) {
	if s.sessionID() == "" {
		s.send(ctx, "There is no conversation to compact yet.")
		return
	}
	text := compactCommand
	if instructions = strings.Join(strings.Fields(instructions), " "); instructions != "" {
		text += " " + instructions
	}
	m.Text = text
	if err := s.enqueue(ctx, workItem{kind: itemTurn, msg: m}); err != nil {
		if e.isStopping() {
			s.send(ctx, shutdownText)
			return
		}
		s.send(ctx, "This conversation's session was just closed; please send the command again.")
	}
}

// reportCompaction posts how a !compact turn went and refreshes the
// context figure from the compaction's own numbers.
func (s *session) reportCompaction(out outcome) {
	switch {
	case out.compacted != nil:
		b := out.compacted
		s.change(func(r *record) { // saved by settle, after the post
			var reported int64
			if r.WindowReported {
				reported = r.ContextWindow
			}
			if out.res != nil && out.res.ContextWindow() > 0 {
				reported = out.res.ContextWindow()
			}
			f := ctxindicator.NewFigures(b.PostTokens, reported, orDefaultInt(r.ContextWindow, s.e.opts.ContextWindow))
			r.ContextTokens, r.ContextWindow, r.WindowReported = f.Tokens, f.Window, f.WindowReported
			r.ContextPct, _ = f.SDK()
			r.SelfPct, r.HasSelfPct = 0, false // Claude's estimate predates the summary
		})
		s.mu.Lock()
		f := s.rec.figures()
		s.mu.Unlock()
		before, _ := ctxindicator.Percent(b.PreTokens, f.Window)
		after, ok := f.SDK()
		text := fmt.Sprintf("Compacted the conversation: %s → %s tokens of context (%d%% → %d%%).",
			groupThousands(b.PreTokens), groupThousands(b.PostTokens), before, after)
		s.log.Info("Conversation compacted", "session_id", s.sessionID(), "pre_tokens", b.PreTokens,
			"post_tokens", b.PostTokens, "trigger", b.Trigger)
		s.send(s.e.bg, ctxindicator.Append(text, after, ok && b.PostTokens > 0))
	case out.compactErr != "":
		s.log.Warn("Compaction failed", "session_id", s.sessionID(), "compact_error", out.compactErr)
		s.send(s.e.bg, "Compaction failed ("+s.forChat(out.compactErr)+"); the conversation is unchanged.")
	default:
		msg := "Claude Code did not report a compaction; the conversation is unchanged."
		switch {
		case out.res != nil && strings.TrimSpace(out.res.Text) != "":
			msg = "Claude Code did not compact the conversation: " + quote(out.res.Text, 300)
		case out.res != nil && len(out.res.Errors) > 0:
			msg = "Compaction failed: " + quote(strings.Join(out.res.Errors, "; "), 300)
		}
		s.log.Warn("Compaction request ended without a compaction", "session_id", s.sessionID())
		s.send(s.e.bg, msg)
	}
}

// modelCommand shows or sets the model of this conversation.
func (e *Engine) modelCommand(ctx context.Context, s *session, arg string) {
	s.mu.Lock()
	rec := s.rec
	s.mu.Unlock()
	if arg == "" {
		s.send(ctx, "Model: "+e.modelLine(rec)+"\nSend !model <name> to change it for this conversation (an alias such as sonnet or opus, or a full model id), or !model default to go back to the configured one.")
		return
	}
	if !validSetting(arg) {
		s.send(ctx, fmt.Sprintf("%q is not a model name.", quote(arg, 60)))
		return
	}
	override := arg
	live := arg
	if strings.EqualFold(arg, "default") {
		override = ""
		live = orDefault(e.opts.Agent.Model, "default")
	}
	err := s.setLive(func(r *record) *string { return &r.ModelOverride }, override, func(ctx context.Context, c liveController) error {
		return c.SetModel(ctx, live)
	})
	if err != nil {
		s.log.Warn("Setting the model failed", "model", arg, "error", err)
		s.send(ctx, "Claude Code refused the model change: "+s.forChat(controlMessage(err)))
		return
	}
	s.log.Info("Model set for the conversation", "model", orDefault(override, "configured default"))
	if override == "" {
		s.send(ctx, "This conversation goes back to the configured model ("+orDefault(e.opts.Agent.Model, "Claude Code's default")+") from the next turn.")
		return
	}
	s.send(ctx, "Model set to "+override+" for this conversation, from the next turn on.")
}

// modeCommand shows or sets the permission mode of this conversation,
// within the modes the config allows.
func (e *Engine) modeCommand(ctx context.Context, s *session, arg string) {
	s.mu.Lock()
	rec := s.rec
	s.mu.Unlock()
	allowed := e.allowedModes()
	if arg == "" {
		s.send(ctx, fmt.Sprintf("Permission mode: %s\nAllowed here: %s. Send !mode <mode> to change it for this conversation.",
			e.modeOf(rec), strings.Join(allowed, ", ")))
		return
	}
	i := slices.IndexFunc(allowed, func(m string) bool { return strings.EqualFold(m, arg) })
	if i < 0 {
		s.send(ctx, fmt.Sprintf("%q is not allowed here. Allowed modes: %s.", quote(arg, 60), strings.Join(allowed, ", ")))
		return
	}
	mode := allowed[i]
	err := s.setLive(func(r *record) *string { return &r.ModeOverride }, mode, func(ctx context.Context, c liveController) error {
		return c.SetPermissionMode(ctx, mode)
	})
	if err != nil {
		s.log.Warn("Setting the permission mode failed", "mode", mode, "error", err)
		s.send(ctx, "Claude Code refused the mode change: "+s.forChat(controlMessage(err)))
		return
	}
	s.log.Info("Permission mode set for the conversation", "mode", mode)
	s.send(ctx, "Permission mode set to "+mode+" for this conversation.")
}

// setLive stores a setting in the record, then applies it to the live
// process if there is one; if the CLI refuses, the old value is restored.
// The record is written before the process is read, and ensureProcess
// reads the record after it publishes a new process (syncControls), so a
// spawn racing with the command still ends up with the new setting.
func (s *session) setLive(field func(*record) *string, value string, apply func(context.Context, liveController) error) error {
	var old string
	s.update(func(r *record) {
		old = *field(r)
		*field(r) = value
	})
	s.mu.Lock()
	proc := s.proc
	s.mu.Unlock()
	c, ok := proc.(liveController)
	if proc == nil || !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(s.e.bg, controlTimeout)
	defer cancel()
	err := apply(ctx, c)
	var ce *agentproc.ControlError
	if errors.As(err, &ce) {
		s.update(func(r *record) { *field(r) = old })
		return err
	}
	if err != nil {
		// The process is gone or wedged: the setting still applies at
		// the next spawn.
		s.log.Debug("Live control request failed; the setting applies at the next start", "error", err)
	}
	return nil
}

// spawnSettings are the model and mode the next process starts with.
func (s *session) spawnSettings() (model, mode string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec.ModelOverride, s.rec.ModeOverride
}

// syncControls applies a !model or !mode that arrived while p was being
// started with model and mode.
func (s *session) syncControls(p agentProcess, model, mode string) {
	nowModel, nowMode := s.spawnSettings()
	c, ok := p.(liveController)
	if !ok || (nowModel == model && nowMode == mode) {
		return
	}
	ctx, cancel := context.WithTimeout(s.e.bg, controlTimeout)
	defer cancel()
	if nowModel != model {
		if err := c.SetModel(ctx, orDefault(nowModel, orDefault(s.e.opts.Agent.Model, "default"))); err != nil {
			s.log.Warn("Applying the conversation's model failed", "model", nowModel, "error", err)
		}
	}
	if nowMode != mode && nowMode != "" {
		if err := c.SetPermissionMode(ctx, nowMode); err != nil {
			s.log.Warn("Applying the conversation's permission mode failed", "mode", nowMode, "error", err)
		}
	}
}

func (e *Engine) modelLine(rec record) string {
	switch {
	case rec.ModelOverride != "" && rec.Model != "" && rec.Model != rec.ModelOverride:
		return fmt.Sprintf("%s (set with !model: %s)", rec.Model, rec.ModelOverride)
	case rec.ModelOverride != "":
		return rec.ModelOverride + " (set with !model)"
	}
	return orDefault(rec.Model, orDefault(e.opts.Agent.Model, "default"))
}

func (e *Engine) modeOf(rec record) string {
	return orDefault(rec.ModeOverride, orDefault(e.opts.Agent.PermissionMode, "default"))
}

// validSetting accepts a model name: one word that cannot be read as a
// CLI flag.
func validSetting(s string) bool {
	if len(s) > 100 || strings.HasPrefix(s, "-") {
		return false
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			strings.ContainsRune("._-:[]/@", r)
		if !ok {
			return false
		}
	}
	return true
}

func controlMessage(err error) string {
	var ce *agentproc.ControlError
	if errors.As(err, &ce) {
		return ce.Message
	}
	return err.Error()
}

func orDefaultInt(n, d int64) int64 {
	if n > 0 {
		return n
	}
	return d
}

// groupThousands writes n as 150,000.
func groupThousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

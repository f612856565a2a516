package conv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/procs"
)

// DefaultAllowedModes are the permission modes !mode may set when
// Options.AllowedModes is empty: none of them skips the permission prompts
// for commands.
var DefaultAllowedModes = []string{"default", "acceptEdits", "plan"}

// compactCommand is the text the CLI compacts on when it arrives as a
// stream-json user message (PROTOCOL.md §14).
const compactCommand = "/compact"

// IsCompaction reports whether a queued turn is a !compact request. Only
// !compact queues such a text: "/compact" typed in the chat is the command.
func IsCompaction(text string) bool {
	return text == compactCommand || strings.HasPrefix(text, compactCommand+" ")
}

func (st *settings) allowedModes() []string {
	if len(st.opts.AllowedModes) > 0 {
		return st.opts.AllowedModes
	}
	return DefaultAllowedModes
}

// modelCommand shows or sets the model of this conversation.
func (s *Conversation) modelCommand(arg string) {
	e := s.e
	rec := s.rb.get()
	if arg == "" {
		s.chat.send("Model: " + e.cfg.modelLine(rec, s.liveBinding()) + "\nSend !model <name> to change it for this conversation (an alias such as sonnet or opus, or a full model id), or !model default to go back to the configured one.")
		return
	}
	if !validSetting(arg) {
		s.chat.send(fmt.Sprintf("%q is not a model name.", Quote(arg, 60)))
		return
	}
	override := arg
	live := arg
	if strings.EqualFold(arg, "default") {
		override = ""
		live = orDefault(e.cfg.agentConfig(s.liveBinding(), false).Model, "default")
	}
	err := s.setLive(func(r *Record) *string { return &r.ModelOverride }, override, func(ctx context.Context, c procs.Controller) error {
		return c.SetModel(ctx, live)
	})
	if err != nil {
		s.log.Warn("Setting the model failed", "model", arg, "error", err)
		s.chat.send("Claude Code refused the model change: " + s.forChat(controlMessage(err)))
		return
	}
	s.log.Info("Model set for the conversation", "model", orDefault(override, "configured default"))
	if override == "" {
		s.chat.send("This conversation goes back to the configured model (" + orDefault(e.cfg.agentConfig(s.liveBinding(), false).Model, "Claude Code's default") + ") from the next turn.")
		return
	}
	s.chat.send("Model set to " + override + " for this conversation, from the next turn on.")
}

// modeCommand shows or sets the permission mode of this conversation,
// within the modes the config allows.
func (s *Conversation) modeCommand(arg string) {
	e := s.e
	rec := s.rb.get()
	allowed := e.cfg.modesFor(s.liveBinding())
	if arg == "" {
		s.chat.send(fmt.Sprintf("Permission mode: %s\nAllowed here: %s. Send !mode <mode> to change it for this conversation.",
			e.cfg.modeOf(rec, s.liveBinding()), strings.Join(allowed, ", ")))
		return
	}
	i := slices.IndexFunc(allowed, func(m string) bool { return strings.EqualFold(m, arg) })
	if i < 0 {
		s.chat.send(fmt.Sprintf("%q is not allowed here. Allowed modes: %s.", Quote(arg, 60), strings.Join(allowed, ", ")))
		return
	}
	mode := allowed[i]
	err := s.setLive(func(r *Record) *string { return &r.ModeOverride }, mode, func(ctx context.Context, c procs.Controller) error {
		return c.SetPermissionMode(ctx, mode)
	})
	if err != nil {
		s.log.Warn("Setting the permission mode failed", "mode", mode, "error", err)
		s.chat.send("Claude Code refused the mode change: " + s.forChat(controlMessage(err)))
		return
	}
	s.log.Info("Permission mode set for the conversation", "mode", mode)
	s.chat.send("Permission mode set to " + mode + " for this conversation.")
}

// setLive stores a setting in the record, then applies it to the live
// process if there is one; if the CLI refuses, the old value is restored.
// Commands and the process's start both run on the session goroutine, so
// the process read here is the one the next turn uses; a process started
// later reads the setting from the record.
func (s *Conversation) setLive(field func(*Record) *string, value string, apply func(context.Context, procs.Controller) error) error {
	var old string
	s.rb.update(func(r *Record) {
		old = *field(r)
		*field(r) = value
	})
	proc := s.agent.Live()
	c, ok := proc.(procs.Controller)
	if proc == nil || !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(s.e.bg, controlTimeout)
	defer cancel()
	err := apply(ctx, c)
	var ce *agentproc.ControlError
	if errors.As(err, &ce) {
		s.rb.update(func(r *Record) { *field(r) = old })
		return err
	}
	if err != nil {
		// The process is gone or wedged: the setting still applies at
		// the next spawn.
		s.log.Debug("Live control request failed; the setting applies at the next start", "error", err)
	}
	return nil
}

// syncControls applies to p, started with model and mode, a !model or !mode
// stored since (the record says what holds now); defaultModel is the
// configured one, which "!model default" goes back to.
func syncControls(p procs.Process, rb *recordBook, model, mode, defaultModel string, log *slog.Logger) {
	nowModel, nowMode := rb.spawnSettings()
	c, ok := p.(procs.Controller)
	if !ok || (nowModel == model && nowMode == mode) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
	defer cancel()
	if nowModel != model {
		if err := c.SetModel(ctx, orDefault(nowModel, orDefault(defaultModel, "default"))); err != nil {
			log.Warn("Applying the conversation's model failed", "model", nowModel, "error", err)
		}
	}
	if nowMode != mode && nowMode != "" {
		if err := c.SetPermissionMode(ctx, nowMode); err != nil {
			log.Warn("Applying the conversation's permission mode failed", "mode", nowMode, "error", err)
		}
	}
}

func (st *settings) modelLine(rec Record, b binding.Binding) string {
	switch {
	case rec.ModelOverride != "" && rec.Model != "" && rec.Model != rec.ModelOverride:
		return fmt.Sprintf("%s (set with !model: %s)", rec.Model, rec.ModelOverride)
	case rec.ModelOverride != "":
		return rec.ModelOverride + " (set with !model)"
	}
	return orDefault(rec.Model, orDefault(st.agentConfig(b, false).Model, "default"))
}

func (st *settings) modeOf(rec Record, b binding.Binding) string {
	return orDefault(rec.ModeOverride, orDefault(st.agentConfig(b, false).PermissionMode, "default"))
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

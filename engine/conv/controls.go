package conv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// setLive stores a setting (!model, !mode) in the record, then applies it
// to the live process if there is one; if the CLI refuses, the old value
// is restored. Commands and the process's start both run on the session
// goroutine, so the process read here is the one the next turn uses; a
// process started later reads the setting from the record.
func setLive(bg context.Context, rb *recordBook, agent *procs.Slot, log *slog.Logger,
	field func(*Record) *string, value string, apply func(context.Context, procs.Controller) error) error {
	var old string
	rb.update(func(r *Record) {
		old = *field(r)
		*field(r) = value
	})
	proc := agent.Live()
	c, ok := proc.(procs.Controller)
	if proc == nil || !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(bg, controlTimeout)
	defer cancel()
	err := apply(ctx, c)
	var ce *agentproc.ControlError
	if errors.As(err, &ce) {
		rb.update(func(r *Record) { *field(r) = old })
		return err
	}
	if err != nil {
		// The process is gone or wedged: the setting still applies at
		// the next spawn.
		log.Debug("Live control request failed; the setting applies at the next start", "error", err)
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

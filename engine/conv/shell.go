package conv

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/adminshell"
	"github.com/cc-connect/cc-connect/platform"
)

// Replies to !sh that refuses.
const (
	ShellOffText      = "!sh is off in this channel. An admin of this cc-connect can turn it on with allow_shell = true in the channel's binding."
	ShellNotAdminText = "Only an admin of this channel can run !sh."
	ShellBusyText     = "A shell command is already running in this conversation; wait for it or send !stop."
	shellUsageText    = "Usage: !sh <command> — runs in this conversation's workspace; the output is posted here and told to Claude at the start of the next turn."
)

// shellSlot is the session's running !sh command: at most one runs per
// session, and !stop and shutdown cancel it.
type shellSlot struct {
	mu     sync.Mutex // guards cancel
	cancel context.CancelFunc
}

// take claims the slot for a command; false when one is running.
func (sl *shellSlot) take(cancel context.CancelFunc) bool {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.cancel != nil {
		return false
	}
	sl.cancel = cancel
	return true
}

// free empties the slot once the command is over.
func (sl *shellSlot) free() {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.cancel = nil
}

// running reports whether a command runs. It takes only the slot's own
// lock, so callers may hold the session's and the engine's.
func (sl *shellSlot) running() bool {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return sl.cancel != nil
}

// stop cancels the running command and reports whether there was one.
func (sl *shellSlot) stop() bool {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.cancel == nil {
		return false
	}
	sl.cancel()
	return true
}

func (st *settings) shellTimeout() (d time.Duration) {
	if st.opts.ShellTimeout > 0 {
		return st.opts.ShellTimeout
	}
	return adminshell.DefaultTimeout
}

// shellCommand runs an admin's !sh in the session's workspace on a
// goroutine of its own, so that turns, !stop and other commands go on
// meanwhile. Only a binding's admins may use it, and only where the
// binding turns it on, both as the config says now (liveBinding); the
// command never passes through Claude's permission prompts, which is why
// it is this narrow.
func (s *Conversation) shellCommand(m platform.Message, command string) {
	e := s.e
	refuse := func(reason, text string) {
		s.log.Warn("Refused a shell command", "reason", reason, "user_id", m.UserID, "user_name", m.UserName)
		s.chat.send(text)
	}
	b := s.liveBinding()
	switch {
	case !b.AllowShell:
		refuse("shell is off for this binding", ShellOffText)
		return
	case !b.Admin(m.UserID):
		refuse("user is not an admin", ShellNotAdminText)
		return
	case strings.TrimSpace(command) == "":
		s.chat.send(shellUsageText)
		return
	}
	runCtx, cancel := context.WithCancel(e.bg)
	if !s.shell.take(cancel) {
		cancel()
		s.chat.send(ShellBusyText)
		return
	}
	e.mu.Lock()
	if e.shutting {
		e.mu.Unlock()
		s.shell.free()
		cancel()
		s.chat.send(ShutdownText)
		return
	}
	e.wg.Add(1)
	e.busy.add(1)
	e.mu.Unlock()
	go func() {
		defer e.wg.Done()
		defer e.busy.add(-1)
		defer s.shell.free()
		defer cancel()
		s.runShell(runCtx, cancel, m, command)
	}()
}

// runShell runs the command to its end (or until ctx is cancelled by
// !stop, or shutdown begins), posts the result and keeps its note for the
// next turn.
func (s *Conversation) runShell(ctx context.Context, cancel context.CancelFunc, m platform.Message, command string) {
	e := s.e
	var watch sync.WaitGroup
	watch.Add(1)
	go func() {
		// Shutdown kills the command at once: unlike a turn, it has no
		// state worth a grace period.
		defer watch.Done()
		select {
		case <-e.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	s.log.Info("Running an admin shell command", "user_id", m.UserID, "user_name", m.UserName,
		"command", Quote(command, 500), "timeout", e.cfg.shellTimeout())
	res := adminshell.Run(ctx, command, adminshell.Options{
		Dir:     s.ws,
		Rule:    e.opts.Agent.Rule(),
		Timeout: e.cfg.shellTimeout(),
	})
	cancel()
	watch.Wait()
	s.log.Info("Admin shell command ended", "user_id", m.UserID, "exit_code", res.ExitCode, "signal", res.Signal,
		"duration", res.Duration, "timed_out", res.TimedOut, "cancelled", res.Cancelled,
		"output_truncated", res.Truncated, "error", errString(res.Err))
	reply := res.ChatReply()
	if res.Err != nil {
		// It could not run: the reply is its error, which may name host
		// paths (the log has them). Output of a command that ran is
		// what the admin asked for and is posted as it is.
		reply = s.forChat(reply)
	}
	s.chat.send(reply)
	if res.Err != nil {
		return // nothing ran: nothing to tell Claude
	}
	s.rb.addShellNote(res.Note())
}

package conv

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/adminshell"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/platform"
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

// stopFor stops the running command, if any, saying so to to, and
// reports whether there was one.
func (sl *shellSlot) stopFor(chat *relay, to platform.Target) bool {
	if !sl.running() {
		return false
	}
	chat.sendTo(to, render.ShellStopping)
	return sl.stop()
}

// shellRun is one admin's !sh: run in the conversation's workspace on a
// goroutine of its own (the Set waits for it), so that turns, !stop and
// other commands go on meanwhile. The command never passes through
// Claude's permission prompts, which is why only a binding's admins may
// run it, and only where the binding turns it on (the gate checks both).
type shellRun struct {
	e       *Set
	slot    *shellSlot
	msg     platform.Message
	command string
	ws      string
	rb      *recordBook
	chat    *relay
	log     *slog.Logger
	forChat func(string) string
	act     feed // the command and how it ended, for the activity feed
}

// start claims the conversation's slot and runs the command; the chat is
// told when another one runs or cc-connect stops.
func (sh *shellRun) start() {
	runCtx, cancel := context.WithCancel(sh.e.bg)
	if !sh.slot.take(cancel) {
		cancel()
		sh.record("refused: another command is running")
		sh.chat.send(render.ShellBusyText)
		return
	}
	ok := spawnWork(sh.e, func() {
		defer sh.slot.free()
		defer cancel()
		sh.run(runCtx, cancel)
	})
	if !ok {
		sh.slot.free()
		cancel()
		sh.chat.send(render.ShutdownText)
	}
}

// run runs the command to its end (or until ctx is cancelled by !stop, or
// shutdown begins), posts the result and keeps its note for the next
// turn.
func (sh *shellRun) run(ctx context.Context, cancel context.CancelFunc) {
	e, m := sh.e, sh.msg
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
	sh.log.Info("Running an admin shell command", "user_id", m.UserID, "user_name", m.UserName,
		"command", Quote(sh.command, 500), "timeout", e.cfg.shellTimeout())
	sh.record("started")
	res := adminshell.Run(ctx, sh.command, adminshell.Options{
		Dir:     sh.ws,
		Rule:    e.opts.Agent.Rule(),
		Timeout: e.cfg.shellTimeout(),
	})
	cancel()
	watch.Wait()
	sh.log.Info("Admin shell command ended", "user_id", m.UserID, "exit_code", res.ExitCode, "signal", res.Signal,
		"duration", res.Duration, "timed_out", res.TimedOut, "cancelled", res.Cancelled,
		"output_truncated", res.Truncated, "error", errString(res.Err))
	sh.record(shellOutcome(res))
	reply := res.ChatReply()
	if res.Err != nil {
		// It could not run: the reply is its error, which may name host
		// paths (the log has them). Output of a command that ran is
		// what the admin asked for and is posted as it is.
		reply = sh.forChat(reply)
	}
	sh.chat.send(reply)
	if res.Err != nil {
		return // nothing ran: nothing to tell Claude
	}
	sh.rb.addShellNote(res.Note())
}

// record publishes the command with what became of it.
func (sh *shellRun) record(outcome string) {
	sh.act.record(activity.Event{Kind: activity.Shell, User: sh.msg.UserID, UserName: sh.msg.UserName, Input: sh.command, Outcome: outcome})
}

// shellOutcome says how a command ended, for the activity feed.
func shellOutcome(res adminshell.Result) string {
	switch {
	case res.Err != nil:
		return "did not run"
	case res.TimedOut:
		return fmt.Sprintf("timed out after %s", res.Duration.Round(time.Millisecond))
	case res.Cancelled:
		return "stopped"
	case res.Signal != "":
		return fmt.Sprintf("killed by %s after %s", res.Signal, res.Duration.Round(time.Millisecond))
	}
	return fmt.Sprintf("exit %d after %s", res.ExitCode, res.Duration.Round(time.Millisecond))
}

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/doctor"
)

// checkCLIVersion logs a warning, once at start-up, when agent.command is
// not the Claude Code release cc-connect is tested with: the stream-json
// protocol is not a stable interface, and a newer CLI that changed it shows
// up as odd replies, not as an error. It runs `claude --version` (a node
// start, about a second) in the background so that serving does not wait;
// the returned func cuts it short if needed and waits for it.
func checkCLIVersion(ctx context.Context, cfg *config.Config, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := doctor.CheckClaude(ctx, cfg, doctor.Options{TestedVersion: claudeCodeVersion})
		if ctx.Err() != nil {
			return // shutting down: the check was cut short
		}
		switch c.Status {
		case doctor.OK:
			log.Debug("Claude Code CLI is the tested version", "detail", c.Detail)
		case doctor.Warn:
			log.Warn("Claude Code CLI is not the tested version; replies may go wrong where its protocol changed", "detail", c.Detail)
		default:
			log.Warn("Checking the Claude Code CLI's version failed", "detail", c.Detail)
		}
	}()
	return func() { cancel(); <-done }
}

// warnLogin says once at start-up, with the fix, when Claude Code has no
// login it can find (doctor's check, offline): every message would
// otherwise come back "Not logged in". When the log goes to a file (the
// terminal chat), the terminal is told as well.
func warnLogin(cfg *config.Config, log *slog.Logger, errOut io.Writer, toTerminal bool) {
	c := doctor.CheckLogin(cfg, doctor.Options{})
	if c.Status == doctor.OK {
		log.Debug("Claude Code login found", "detail", c.Detail)
		return
	}
	log.Warn("Claude Code is not logged in; every turn will fail until it is", "detail", c.Detail)
	if toTerminal {
		fmt.Fprintf(errOut, "cc-connect: warning: Claude Code is not logged in: %s (docs/operations.md, \"Logging in\")\n", c.Detail)
	}
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sync"
)

// Exit codes: scripts and service managers branch on them.
const (
	exitOK          = 0
	exitFailure     = 1   // cc-connect started and then failed
	exitUsage       = 2   // bad arguments or config: fix and retry
	exitInterrupted = 130 // a second signal cut the graceful shutdown short
)

const defaultConfigPath = "config.toml"

// stdio are the process's standard streams, injectable for tests.
type stdio struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

const usageText = `cc-connect drives Claude Code from chat (Slack, Discord, Telegram, or this terminal).

Usage:
  cc-connect [--config FILE]             same as "run"
  cc-connect run [--config FILE]         run until SIGINT/SIGTERM (or end of input for the local chat)
  cc-connect check [--config FILE]       validate the config and print it with secrets redacted
  cc-connect doctor [--config FILE]      check offline that everything "run" needs is in place
  cc-connect sessions [--config FILE] [--json]
                                         list cc-connect's sessions and each workspace's Claude Code transcripts
  cc-connect worktrees [--config FILE] [--json]
                                         list the git worktrees of conversations (bindings with worktree = true)
  cc-connect worktrees remove [--force] BRANCH...
                                         remove worktrees; refuses ones in use, with uncommitted changes or
                                         unmerged commits (--force discards changes; a branch with commits stays)
  cc-connect worktrees prune             remove every retired worktree that is clean and merged
  cc-connect cluster status [--config FILE] [--json]
                                         owner, standbys and holder of each binding, each host's health
  cc-connect cluster nkey FILE           write a new NKey seed for cluster.nkey_seed_file; print its public key
  cc-connect version                     print the version and the Claude Code version it is tested with
  cc-connect help                        print this help

FILE defaults to config.toml; start from config.example.toml (keys: docs/configuration.md).
Exit codes: 0 done, 1 failed while running, 2 bad arguments or config, 130 second signal.
`

// cli runs one command line and returns the exit code.
func cli(ctx context.Context, args []string, std stdio) int {
	global := flag.NewFlagSet("cc-connect", flag.ContinueOnError)
	global.SetOutput(std.Err)
	global.Usage = func() { fmt.Fprint(std.Err, usageText) }
	configPath := global.String("config", defaultConfigPath, "config file")
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	cmd, rest := "run", global.Args()
	if len(rest) > 0 {
		cmd, rest = rest[0], rest[1:]
	}
	switch cmd {
	case "run", "check":
		fs := flag.NewFlagSet("cc-connect "+cmd, flag.ContinueOnError)
		fs.SetOutput(std.Err)
		fs.Usage = global.Usage
		path := fs.String("config", *configPath, "config file")
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return exitOK
			}
			return exitUsage
		}
		if fs.NArg() > 0 {
			fmt.Fprintf(std.Err, "cc-connect %s: unexpected argument %q\n\n%s", cmd, fs.Arg(0), usageText)
			return exitUsage
		}
		if cmd == "check" {
			return checkCommand(*path, std)
		}
		return runCommand(ctx, *path, std)
	case "doctor":
		return doctorMain(ctx, *configPath, rest, std)
	case "sessions":
		return sessionsMain(ctx, *configPath, rest, std)
	case "worktrees":
		return worktreesMain(ctx, *configPath, rest, std)
	case "cluster":
		return clusterMain(ctx, *configPath, rest, std)
	case "version":
		if len(rest) > 0 {
			fmt.Fprintf(std.Err, "cc-connect version: unexpected argument %q\n", rest[0])
			return exitUsage
		}
		fmt.Fprintf(std.Out, "cc-connect %s\ntested with Claude Code %s\nbuilt with %s\n", version, claudeCodeVersion, runtime.Version())
		return exitOK
	case "help":
		fmt.Fprint(std.Out, usageText)
		return exitOK
	default:
		fmt.Fprintf(std.Err, "cc-connect: unknown command %q\n\n%s", cmd, usageText)
		return exitUsage
	}
}

// signalContext returns a context cancelled by the first signal on sigs
// (the engine then shuts down gracefully); a second signal calls second,
// which exits at once in the binary. cancel stops watching.
func signalContext(parent context.Context, sigs chan os.Signal, errOut io.Writer, second func()) (context.Context, context.CancelFunc) {
	ctx, cancelCtx := context.WithCancel(parent)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := 0
		for {
			select {
			case <-stop:
				return
			case sig := <-sigs:
				seen++
				if seen == 1 {
					fmt.Fprintf(errOut, "cc-connect: %v received, shutting down gracefully (send it again to exit at once)\n", sig)
					cancelCtx()
					continue
				}
				second()
				return
			}
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			close(stop)
			<-done
			signal.Stop(sigs)
			cancelCtx()
		})
	}
}

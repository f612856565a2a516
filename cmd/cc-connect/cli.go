package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
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
  cc-connect init [--platform local|slack|discord|telegram] [--workspace DIR] [--config FILE]
                                         write a commented starter config (never over an existing file)
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
  cc-connect audit [--config FILE] [--conversation KEY] [--user USER] [--since T] [--until T] [--kind K,...] [--json]
                                         print the audit trail: who asked what, tools run, approvals, !sh, reloads
  cc-connect cluster status [--config FILE] [--json]
                                         owner, standbys and holder of each binding, each host's health
  cc-connect cluster nkey FILE           write a new NKey seed for cluster.nkey_seed_file; print its public key
  cc-connect version (or --version)      print the version and the Claude Code version it is tested with
  cc-connect help (or -h, --help)        print this help

FILE defaults to config.toml; "cc-connect init" writes one (keys: docs/configuration.md).
Exit codes: 0 done, 1 failed while running, 2 bad arguments or config, 130 second signal.
`

// cli runs one command line and returns the exit code.
func cli(ctx context.Context, args []string, std stdio) int {
	global := flag.NewFlagSet("cc-connect", flag.ContinueOnError)
	configPath := global.String("config", defaultConfigPath, "config file")
	showVersion := global.Bool("version", false, "print the version")
	if code, ok := parseFlags(global, args, std); !ok {
		return code
	}
	if *showVersion {
		built.write(std.Out)
		return exitOK
	}
	cmd, rest := "run", global.Args()
	if len(rest) > 0 {
		cmd, rest = rest[0], rest[1:]
	}
	switch cmd {
	case "run", "check":
		fs := flag.NewFlagSet("cc-connect "+cmd, flag.ContinueOnError)
		path := fs.String("config", *configPath, "config file")
		if code, ok := parseFlags(fs, rest, std); !ok {
			return code
		}
		if fs.NArg() > 0 {
			fmt.Fprintf(std.Err, "cc-connect %s: unexpected argument %q\n\n%s", cmd, fs.Arg(0), usageText)
			return exitUsage
		}
		if cmd == "check" {
			return checkCommand(*path, std)
		}
		return runCommand(ctx, *path, std)
	case "init":
		return initMain(*configPath, rest, std)
	case "doctor":
		return doctorMain(ctx, *configPath, rest, std)
	case "sessions":
		return sessionsMain(ctx, *configPath, rest, std)
	case "worktrees":
		return worktreesMain(ctx, *configPath, rest, std)
	case "cluster":
		return clusterMain(ctx, *configPath, rest, std)
	case "audit":
		return auditMain(ctx, *configPath, rest, std)
	case "version":
		if len(rest) > 0 {
			fmt.Fprintf(std.Err, "cc-connect version: unexpected argument %q\n", rest[0])
			return exitUsage
		}
		built.write(std.Out)
		return exitOK
	case "help":
		fmt.Fprint(std.Out, usageText)
		return exitOK
	default:
		fmt.Fprintf(std.Err, "cc-connect: unknown command %q\n\n%s", cmd, usageText)
		return exitUsage
	}
}

// parseFlags parses args into fs, the one way every command reads its
// flags. Help that was asked for (-h, --help) goes to stdout with exit 0,
// so that `cc-connect --help | less` works; a flag error goes to stderr
// with a pointer to the help, exit 2. ok is false when the caller should
// return code at once.
func parseFlags(fs *flag.FlagSet, args []string, std stdio) (code int, ok bool) {
	fs.SetOutput(std.Err) // where the flag package writes its error
	fs.Usage = func() {}  // the help is written below, to the right stream
	err := fs.Parse(args)
	switch {
	case err == nil:
		return exitOK, true
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(std.Out, usageText)
		return exitOK, false
	default:
		fmt.Fprintf(std.Err, "Run %q for the commands and their flags.\n", "cc-connect help")
		return exitUsage, false
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

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/cc-connect/cc-connect/agentcfg"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/engine"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/lease"
	"github.com/cc-connect/cc-connect/metrics"
	"github.com/cc-connect/cc-connect/platform/local"
	"github.com/cc-connect/cc-connect/schedule"
	"github.com/cc-connect/cc-connect/trigger"
)

// loadConfig loads and checks the config, printing what is wrong; it
// returns nil on failure (a usage error: exit code 2).
func loadConfig(path string, errOut io.Writer) *config.Config {
	cfg, err := config.Load(path)
	if errors.Is(err, config.ErrNotFound) {
		fmt.Fprintf(errOut, "cc-connect: %v\n%s", err, configNotFoundHint(path))
		return nil
	}
	if err != nil {
		fmt.Fprintf(errOut, "cc-connect: %v\n", err)
		return nil
	}
	if err := checkAvailable(cfg, adapterFactories); err != nil {
		fmt.Fprintf(errOut, "cc-connect: invalid config %s:\n%v\n", cfg.Path, err)
		return nil
	}
	return cfg
}

// checkAgentCommand fails early, naming the key, when the claude executable
// cannot be found: otherwise the first chat message would be the first to
// notice.
func checkAgentCommand(command string) error {
	if _, err := exec.LookPath(command); err != nil {
		where := "in PATH"
		if strings.ContainsRune(command, '/') {
			where = "or not executable"
		}
		return fmt.Errorf("agent.command: %q not found %s: install Claude Code %s "+
			"(npm install -g @anthropic-ai/claude-code@%s) or set agent.command to its path",
			command, where, claudeCodeVersion, claudeCodeVersion)
	}
	return nil
}

// newLogger builds the process logger from [log], writing to w.
func newLogger(l config.Log, w io.Writer) *slog.Logger {
	log, _ := newLevelLogger(l, w)
	return log
}

// newLevelLogger is newLogger with its level variable, which a reload of
// log.level sets.
func newLevelLogger(l config.Log, w io.Writer) (*slog.Logger, *slog.LevelVar) {
	level := new(slog.LevelVar)
	level.Set(l.SlogLevel())
	opts := &slog.HandlerOptions{Level: level}
	if l.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), level
	}
	return slog.New(slog.NewTextHandler(w, opts)), level
}

// engineOptions turns the config into the engine's options.
func engineOptions(cfg *config.Config, log *slog.Logger) engine.Options {
	a := cfg.Agent
	return engine.Options{
		Agent:                    agentcfg.From(cfg),
		Bindings:                 cfg.BindingSpecs(),
		StateDir:                 cfg.State.Dir,
		IdleTimeout:              a.IdleTimeout.D(),
		PermissionTimeout:        a.PermissionTimeout.D(),
		ApprovalReminder:         a.ApprovalReminder.D(),
		StallNotice:              a.StallNotice.D(),
		MaxTurnTime:              a.MaxTurnTime.D(),
		LimitRetry:               a.LimitRetry.D(),
		MaxProcesses:             a.MaxProcesses,
		MaxProcessesPerWorkspace: a.MaxProcessesPerWorkspace,
		Prewarm:                  a.Prewarm,
		QueueLimit:               a.QueueLimit,
		ContextWindow:            a.ContextWindow,
		SelfReport:               a.SelfReport,
		ShutdownGrace:            a.ShutdownGrace.D(),
		SeenWindow:               cfg.State.SeenWindow.D(),
		ShellTimeout:             a.ShellTimeout.D(),
		ArtifactThreshold:        int(cfg.Files.ArtifactThreshold),
		ArtifactQuota:            int64(cfg.Files.ArtifactQuota),
		AttachmentMaxBytes:       int64(cfg.Files.AttachmentMaxSize),
		AllowedModes:             append([]string(nil), a.AllowedModes...),
		SpendAdminsExempt:        cfg.Spend.AdminsExempt,
		Team:                     teamOptions(cfg),
		Logger:                   log,
	}
}

// platformToken is the credential that identifies a platform's bot: two
// cc-connects polling one token steal each other's events.
func platformToken(p config.Platform) string { return p.IdentityToken().Reveal() }

// acquireLocks takes the state dir lock and one lock per bot token, so a
// second cc-connect on the same state or the same bot refuses to start.
// The caller releases them, also on error.
func acquireLocks(cfg *config.Config) (*instanceLocks, error) {
	locks := &instanceLocks{tokens: map[string]*lease.Lock{}}
	l, err := lease.StateDir(cfg.State.Dir)
	if err != nil {
		return locks, err
	}
	locks.state = l
	if cfg.Cluster != nil {
		// The hosts of a cluster share the bot's tokens by design (each
		// opens its own Slack connection; pollers follow leases): the
		// state dir's lock is what keeps two cc-connects apart.
		return locks, nil
	}
	taken, err := locks.take(cfg.Platforms)
	if err != nil {
		return locks, err
	}
	locks.swap(taken, nil)
	return locks, nil
}

// shutdownAtEOF says whether the end of the terminal's input ends the
// process: only when the terminal is the only platform. A daemon that also
// serves Slack keeps running when its stdin is /dev/null or closes.
func shutdownAtEOF(cfg *config.Config) bool {
	return len(cfg.Platforms) == 1 && cfg.Platforms[0].Type == config.TypeLocal
}

// runFlags are `cc-connect run`'s own flags.
type runFlags struct {
	// logStderr keeps the log on stderr when the terminal chat runs on a
	// terminal (it goes to a file there otherwise).
	logStderr bool
}

// runCommand is `cc-connect run`: it returns when the engine has shut down.
func runCommand(ctx context.Context, path string, std stdio, flags runFlags) int {
	cfg := loadConfig(path, std.Err)
	if cfg == nil {
		return exitUsage
	}
	if err := checkClusterPlatforms(cfg); err != nil {
		fmt.Fprintf(std.Err, "cc-connect: invalid config %s:\n%v\n", cfg.Path, err)
		return exitUsage
	}
	if err := checkAgentCommand(cfg.Agent.Command); err != nil {
		fmt.Fprintf(std.Err, "cc-connect: %v\n", err)
		return exitUsage
	}
	if err := cfg.CheckAgentUser(); err != nil {
		fmt.Fprintf(std.Err, "cc-connect: %v\n", err)
		return exitUsage
	}
	// As root, with the agent as root, nothing keeps a token from Claude:
	// only the terminal may be served without the admin's word.
	if err := cfg.CheckRoot(); err != nil {
		fmt.Fprintf(std.Err, "cc-connect: %v\n", err)
		return exitUsage
	}
	// The tokens live in this process (its memory, its environment): an
	// agent running as the same OS user must not read them through
	// /proc/<pid>/environ, /proc/<pid>/mem or ptrace.
	if err := hideProcess(); err != nil {
		fmt.Fprintf(std.Err, "cc-connect: %v\n", err)
		return exitFailure
	}
	// A person chatting in the terminal reads replies there, not log
	// lines: the log goes to a file, named once.
	chat := terminalChat(cfg, std)
	toFile := chat.screen && !flags.logStderr
	logTo := std.Err
	if toFile {
		if err := prepareStateDir(cfg.State.Dir); err != nil {
			fmt.Fprintf(std.Err, "cc-connect: preparing the state dir: %v\n", err)
			return exitFailure
		}
		f, path, err := openLogFile(cfg.State.Dir)
		if err != nil {
			fmt.Fprintf(std.Err, "cc-connect: %v\n", err)
			return exitFailure
		}
		defer f.Close()
		logTo = f
		fmt.Fprintf(std.Err, "cc-connect: logging to %s (--log-stderr logs here instead)\n", path)
	}
	log, level := newLevelLogger(cfg.Log, logTo)
	log.Debug("Config loaded", "config", cfg) // secrets redacted by Config.LogValue
	for _, w := range cfg.Warnings {
		log.Warn("Config warning", "warning", w)
		if toFile {
			fmt.Fprintf(std.Err, "cc-connect: warning: %s\n", w)
		}
	}

	if err := prepareStateDir(cfg.State.Dir); err != nil {
		log.Error("Preparing the state dir failed", "error", err)
		return exitFailure
	}
	warnLogin(cfg, log, std.Err, toFile)
	locks, err := acquireLocks(cfg)
	defer locks.release()
	if errors.Is(err, lease.ErrHeld) {
		log.Error("Another cc-connect is running", "error", err)
		return exitFailure
	}
	if err != nil {
		log.Error("Taking the instance locks failed", "error", err)
		return exitFailure
	}
	// Before anything is taken or written (a lease, a journal): journals
	// a newer cc-connect wrote are not this one's to read.
	if err := inbox.CheckFormats(filepath.Join(cfg.State.Dir, "inbox")); err != nil {
		log.Error("This cc-connect cannot read the state a newer one left", "error", err)
		return exitFailure
	}
	if _, moved := lease.HostLocks(); moved != nil && cfg.Cluster == nil {
		log.Warn("The usual folder of the token locks cannot be used", "error", moved)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var m *metrics.Metrics // nil: [metrics] is off
	if cfg.Metrics.Addr != "" {
		// Listen before starting so that a taken port fails the start.
		ln, err := metrics.Listen(cfg.Metrics.Addr, cfg.Metrics.AllowRemote)
		if err != nil {
			log.Error("Serving metrics failed", "error", err)
			return exitFailure
		}
		m = metrics.New()
		served := make(chan struct{})
		go func() {
			defer close(served)
			if err := m.ServeListener(ctx, ln); err != nil {
				log.Error("Serving metrics stopped", "error", err)
			}
		}()
		defer func() { cancel(); <-served }()
		log.Info("Serving metrics", "addr", ln.Addr().String())
	}
	clock, err := runClock(ctx, log)
	if err != nil {
		log.Error("Starting the clock failed", "error", err)
		return exitFailure
	}
	// Ledgers that cannot be read and a taken webhook port fail the start.
	un, err := openUnattended(cfg, clock, log)
	if err != nil {
		log.Error("Opening schedules, webhooks or the spending ledger failed", "error", err)
		return exitFailure
	}
	defer un.close()
	m.SetSpendFunc(spendFigures(un.spend))
	opts := engineOptions(cfg, log)
	if m != nil {
		opts.Metrics = m
	}
	// The one feed of what happens in conversations; the audit trail is
	// its first observer. Closed after the engine and the cluster, so
	// that their last events are written.
	feed, redact := newFeed(cfg)
	trail, err := startAudit(cfg, feed, log)
	if err != nil {
		log.Error("Opening the audit trail failed", "error", err)
		return exitFailure
	}
	defer trail.Close()
	opts.Activity = feed
	opts.Spending = un.spend
	// A taken console port fails the start, like the metrics'.
	wc, err := openConsole(cfg, clock.Now, log)
	if err != nil {
		log.Error("Opening the console failed", "error", err)
		return exitFailure
	}
	if wc != nil {
		opts.ConsoleLinks = wc.links
		feed.Subscribe(wc.srv) // the live views read the one feed
	}
	eng, err := engine.New(opts)
	if err != nil {
		if wc != nil {
			wc.ln.Close()
		}
		log.Error("Creating the engine failed", "error", err)
		return exitFailure
	}
	// With [cluster]: the adapters publish, and this host's engine
	// consumes the bindings it owns or stands by for (cluster_run.go).
	ch, ci, err := joinCluster(ctx, cfg, eng, log)
	if err != nil {
		log.Error("Joining the cluster failed", "error", err)
		return exitFailure
	}
	defer func() { cancel(); ch.close() }()
	// In a cluster, runs go to their binding's owner through the stream,
	// and a schedule fires only where its binding's lease is held.
	var sub trigger.Submitter = eng
	var serves func(platform, channel string) bool
	var pauses schedule.Pauses
	if ch != nil {
		sub, serves, pauses = ch, ch.serves, ch.node.Pauses()
	}
	sched, err := un.scheduler(cfg, sub, serves, pauses)
	if err != nil {
		log.Error("Creating the scheduler failed", "error", err)
		return exitFailure
	}
	if sched != nil {
		eng.SetSchedules(sched)
		if ch != nil {
			ch.setWake(sched.Wake)
		}
	}
	// Runs wait in Submit until the engine has recovered what a crash
	// left; the listener and the scheduler stop before the engine does.
	if err := un.start(ctx, cfg, sub); err != nil {
		log.Error("Starting schedules and webhooks failed", "error", err)
		return exitFailure
	}
	defer func() { cancel(); un.wait() }()
	if wc != nil {
		wc.start(ctx, eng, un.sched, un.spend, ch, log)
		defer func() { cancel(); wc.wait() }()
	}
	var atEOF atomic.Bool // the run ends because the terminal's input did
	deps := adapterDeps{
		Stdin:       std.In,
		Stdout:      std.Out,
		Stderr:      std.Err,
		Interactive: chat.interactive,
		Terminal:    chat.screen,
		Width:       chat.width,
		User:        currentUser(),
		Log:         log,
		Cluster:     cfg.Cluster != nil,
		OnEOF: func(ctx context.Context) {
			atEOF.Store(true)
			if !shutdownAtEOF(cfg) {
				log.Info("Terminal input ended; the other platforms keep running")
				return
			}
			// The terminal was the only way in: finish what was accepted,
			// then shut down as a signal would.
			if err := eng.WaitIdle(ctx); err == nil {
				log.Info("End of input and no work left: shutting down")
			}
			cancel()
		},
	}
	if m != nil {
		deps.Observer = m
	}
	adapters, err := buildAdapters(cfg, deps)
	if err != nil {
		fmt.Fprintf(std.Err, "cc-connect: invalid config %s:\n%v\n", cfg.Path, err)
		return exitUsage
	}
	if adapters, err = prepareClusterAdapters(ctx, ch, cfg, adapters, log); err != nil {
		log.Error("Preparing the platforms for the cluster failed", "error", err)
		return exitFailure
	}
	if ch != nil {
		ch.serve(ctx, ci)
	}
	names := make([]string, len(adapters))
	var term *local.Adapter // the terminal chat, when one is served
	for i, a := range adapters {
		eng.AddAdapter(a)
		names[i] = a.Name()
		if la, ok := a.(*local.Adapter); ok {
			term = la
		}
	}
	if term != nil && chat.interactive {
		std.Interrupt.set(func() interruptAction {
			switch term.Interrupt() {
			case local.StoppingTurn:
				return interruptHandled
			case local.StopAgain:
				return interruptExitNow
			}
			return interruptShutDown
		})
		defer std.Interrupt.set(nil)
	}
	// Edits of the config file (and SIGHUP) apply while it runs.
	rl := &reloader{log: log, level: level, eng: eng, deps: deps, locks: locks, running: cfg, secrets: opts.Agent.Secrets, redact: redact,
		activity: feed}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		rl.watch(ctx, hup)
	}()
	defer func() { cancel(); <-watched }()

	log.Info("cc-connect started", "version", version, "config", cfg.Path, "state_dir", cfg.State.Dir,
		"platforms", names, "bindings", len(cfg.Bindings), "agent_user", opts.Agent.User.String())
	defer checkCLIVersion(ctx, cfg, log)()
	if err := eng.Run(ctx); err != nil {
		log.Error("cc-connect stopped with an error", "error", err)
		return exitFailure
	}
	log.Info("cc-connect stopped")
	if term != nil && atEOF.Load() {
		// A script piped its messages in: it learns from the exit code
		// that none of them got an answer.
		if done, failed := term.Outcomes(); failed > 0 && done == 0 {
			fmt.Fprintf(std.Err, "cc-connect: every turn failed (%d); see the replies above\n", failed)
			return exitFailure
		}
	}
	return exitOK
}

// checkCommand is `cc-connect check`: load, validate (adapters included),
// and print the effective config with secrets redacted.
func checkCommand(path string, std stdio) int {
	cfg := loadConfig(path, std.Err)
	if cfg == nil {
		return exitUsage
	}
	code := exitOK
	if _, err := buildAdapters(cfg, adapterDeps{Stdin: std.In, Stdout: io.Discard, Stderr: io.Discard, Log: slog.New(slog.DiscardHandler)}); err != nil {
		fmt.Fprintf(std.Err, "cc-connect: invalid config %s:\n%v\n", cfg.Path, err)
		code = exitUsage
	}
	if err := checkAgentCommand(cfg.Agent.Command); err != nil {
		fmt.Fprintf(std.Err, "cc-connect: %v\n", err)
		code = exitUsage
	}
	if err := cfg.CheckAgentUser(); err != nil {
		// Not an error of the file: it may be checked before being
		// installed for root. `run` as this user refuses it.
		fmt.Fprintf(std.Err, "warning: %v (cc-connect run refuses to start as this user)\n", err)
	}
	if err := cfg.CheckRoot(); err != nil {
		fmt.Fprintf(std.Err, "warning: %v (cc-connect run refuses to start so)\n", err)
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(std.Err, "warning: %s\n", w)
	}
	if code != exitOK {
		return code
	}
	fmt.Fprint(std.Out, cfg.String())
	fmt.Fprintf(std.Err, "%s: OK\n", cfg.Path)
	return exitOK
}

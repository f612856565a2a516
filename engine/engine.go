// Package engine routes normalized chat messages to Claude Code sessions. It
// owns the accept path (accept.go: dedupe, route, journal with one fsync,
// return a platform.Result, nothing posted or downloaded there), bindings
// (which chat reaches which workspace and who may use it), sessions (one per
// platform, channel and thread, each with one goroutine that composes a
// mailbox, a journal, a record, an agent process, a relay and a turn
// runner: session.go says which is which), the process caps, permission
// prompts, chat commands, the fallbacks that keep a session usable when
// resuming fails, recovery after a crash, and work that starts without a
// person (runs, spending caps, worktrees: trigger.go). It imports platform,
// agentproc, inbox, workspace and ctxindicator, and the leaf packages
// trigger, schedule, spend and worktree, never a platform library;
// it never parses the CLI's wire format (agentproc does) nor writes Claude
// Code's transcripts.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/ctxindicator"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/spend"
	"github.com/google/uuid"
)

// Options configure an Engine.
type Options struct {
	Agent                    agentproc.Config // base agent config (command, args, env, model, mode)
	Bindings                 []binding.Binding
	StateDir                 string        // sessions state lives under StateDir/sessions (0700/0600)
	IdleTimeout              time.Duration // reap idle processes after this (0 = never)
	PermissionTimeout        time.Duration // deny a pending permission request after this (0 = never)
	ApprovalReminder         time.Duration // mention the approvers once when a request waited this long (0 = never)
	StallNotice              time.Duration // tell the thread when claude sent nothing this long (0 = never)
	LimitRetry               time.Duration // first wait for a usage window of unknown reset (0 = 5m)
	MaxTurnTime              time.Duration // interrupt a turn that runs longer (0 = no limit)
	MaxProcesses             int           // global cap on live claude processes (0 = unlimited)
	MaxProcessesPerWorkspace int           // per workspace cap (0 = unlimited)
	Prewarm                  int           // spare processes per recently active workspace (0 = none; spares.go)
	QueueLimit               int           // per session FIFO (default 20)
	ContextWindow            int64         // fallback window (default 200000)
	SelfReport               bool          // ctx track B: add the self-report instruction
	ShutdownGrace            time.Duration // let running turns finish this long on shutdown
	SeenWindow               time.Duration // remember accepted message ids this long (default inbox.DefaultSeenWindow)
	ShellTimeout             time.Duration // kill a !sh command after this (default 2m)
	ArtifactThreshold        int           // bytes of message above which it becomes an artifact (default 16 KiB)
	ArtifactQuota            int64         // bytes per workspace folder of artifacts or attachments (default 64 MiB)
	AttachmentMaxBytes       int64         // largest attachment passed on (default 10 MiB)
	AllowedModes             []string      // permission modes !mode may set (default: default, acceptEdits, plan)
	Team                     TeamOptions   // sender header, thread context, notify, send_file (team.go)
	Logger                   *slog.Logger
	Metrics                  Metrics          // turns, permissions, queue, sessions…; nil = off
	Activity                 activity.Sink    // what happens in conversations, for the audit trail and the console; nil = none
	Now                      func() time.Time // for tests; nil = time.Now
	// Spending is the spending ledger turns are charged to and checked
	// against (spend.go); nil: no caps. SpendAdminsExempt lets a binding's
	// admins start turns over its caps.
	Spending          *spend.Ledger
	SpendAdminsExempt bool
	// ConsoleLinks issues a one-time sign-in link to the console for a
	// person (!console); nil when the console is off.
	ConsoleLinks func(platform, userID, userName string) (string, error)
}

// Defaults applied by New.
const (
	DefaultQueueLimit    = 20
	DefaultContextWindow = 200000
	DefaultShutdownGrace = 30 * time.Second
)

// Engine routes chat messages to Claude Code sessions. Create it with New,
// add adapters, then Run it. Its conversations are a conv.Set's; the
// engine keeps routing, bindings, reloads and submission, and is the
// conversations' conv.Host (host.go).
type Engine struct {
	opts  Options
	log   *slog.Logger
	now   func() time.Time
	spawn procs.SpawnFunc
	tx    procs.Transcripts
	slots *procs.Caps
	// refused holds the threads that got the access refusal (session
	// keys), bounded: a thread forgotten gets one refusal more.
	refused *conv.Recent
	spare   *procs.Spares // spare processes for new conversations

	convs *conv.Set // the conversations
	// bg outlives every agent process and platform call made by the
	// conversations; Run cancels it only after all of them ended.
	bg        context.Context
	cancelBg  context.CancelFunc
	metrics   Metrics    // never nil (a no-op when off)
	routes    *routing   // the bindings and team settings in force (binding.go)
	ads       *adapters  // registered and running adapters (adapters.go)
	reloading sync.Mutex // one Reload at a time (reload.go)
	notices   *notifier  // posts for conversations without a session (notify.go)
	sched     atomic.Pointer[Schedules]

	// cluster is set by JoinCluster: the conversations of clustered
	// platforms come from the cluster's stream (cluster.go).
	cluster *ClusterOptions
	tenures tenures // the bindings this host serves now, in a cluster (cluster.go)
}

var _ platform.Handler = (*Engine)(nil)

// New checks opts and builds an Engine. It has no side effects: no files are
// read and no process starts before Run or the first message.
func New(opts Options) (*Engine, error) {
	if opts.StateDir == "" {
		return nil, errors.New("engine: StateDir is required")
	}
	if opts.QueueLimit <= 0 {
		opts.QueueLimit = DefaultQueueLimit
	}
	if opts.ContextWindow <= 0 {
		opts.ContextWindow = DefaultContextWindow
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = DefaultShutdownGrace
	}
	if opts.MaxProcesses < 0 || opts.MaxProcessesPerWorkspace < 0 || opts.Prewarm < 0 {
		return nil, errors.New("engine: process caps and prewarm must not be negative")
	}
	for i, b := range opts.Bindings {
		if b.Platform == "" || b.Channel == "" || b.Workspace == "" {
			return nil, fmt.Errorf("engine: bindings[%d]: platform, channel and workspace are required", i)
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	base := opts.Agent // the conversations add the engine's instructions themselves
	if opts.SelfReport {
		opts.Agent.AppendSystemPrompt = joinPrompt(opts.Agent.AppendSystemPrompt, ctxindicator.SelfReportInstruction)
	}
	bg, cancel := context.WithCancel(context.Background())
	e := &Engine{
		bg:       bg,
		cancelBg: cancel,
		opts:     opts,
		log:      log,
		now:      now,
		spawn:    procs.Start,
		tx:       procs.NewDiskTranscripts(opts.Agent),
		slots:    procs.NewCaps(opts.MaxProcesses, opts.MaxProcessesPerWorkspace),
		routes:   &routing{pool: newPool(log), initial: opts.Bindings, initialTeam: opts.Team},
		ads:      newAdapters(log),
		refused:  conv.NewRecent(refusedMemory),
		metrics:  conv.MetricsOf(opts.Metrics),
	}
	e.spare = procs.NewSpares(procs.SparesConfig{N: opts.Prewarm, Idle: opts.IdleTimeout, Caps: e.slots,
		// e.spawn is read at each start: tests swap it after New.
		Spawn: func(ctx context.Context, cfg agentproc.Config, o agentproc.StartOptions, log *slog.Logger) (procs.Process, error) {
			return e.spawn(ctx, cfg, o, log)
		},
		StateDir: opts.StateDir, Grace: opts.ShutdownGrace, BG: bg, Log: log, Now: now, NewID: uuid.NewString, Agent: opts.Agent})
	e.convs = conv.NewSet(conv.Options{
		Agent: base, SelfReport: opts.SelfReport, StateDir: opts.StateDir,
		IdleTimeout: opts.IdleTimeout, PermissionTimeout: opts.PermissionTimeout, ApprovalReminder: opts.ApprovalReminder, StallNotice: opts.StallNotice, LimitRetry: opts.LimitRetry,
		MaxTurnTime: opts.MaxTurnTime, MaxProcessesPerWorkspace: opts.MaxProcessesPerWorkspace,
		QueueLimit: opts.QueueLimit, ContextWindow: opts.ContextWindow, ShutdownGrace: opts.ShutdownGrace,
		SeenWindow: opts.SeenWindow, ShellTimeout: opts.ShellTimeout, ArtifactThreshold: opts.ArtifactThreshold,
		ArtifactQuota: opts.ArtifactQuota, AttachmentMaxBytes: opts.AttachmentMaxBytes, AllowedModes: opts.AllowedModes,
		Spending: opts.Spending, SpendAdminsExempt: opts.SpendAdminsExempt, ConsoleLinks: opts.ConsoleLinks,
	}, conv.Deps{Host: host{e}, BG: bg, Caps: e.slots, Spares: e.spare, Log: log, Metrics: e.metrics, Activity: opts.Activity, Now: now})
	e.ads.handler = e.inbound
	e.notices = &notifier{chat: e.ads.get, busy: e.convs.Busy, bg: bg, log: log, metrics: e.metrics}
	wireMetrics(e.metrics, e.convs, e.slots, e.spare)
	return e, nil
}

func joinPrompt(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n\n" + b
}

// AddAdapter registers a platform adapter; call it before Run.
func (e *Engine) AddAdapter(a platform.Adapter) { e.ads.add(a) }

// Run runs every adapter and the sessions until ctx is cancelled; call it
// once. Then it stops admitting messages, lets running turns finish within
// ShutdownGrace, interrupts and closes every agent process, and returns
// when all are gone. An adapter that fails is logged; the others keep
// running.
func (e *Engine) Run(ctx context.Context) error {
	// Work accepted before a crash resumes before new input arrives.
	e.convs.Recover()
	e.convs.Prewarm() // spares for the workspaces of the latest turns (agent.prewarm)

	e.ads.start(ctx) // each under a ctx of its own, so a reload can restart one
	<-ctx.Done()
	e.log.Info("Shutting down: finishing running turns", "grace", e.opts.ShutdownGrace)

	e.convs.Stop()
	e.spare.Close()
	e.convs.Wait() // every session loop and side question has closed its process
	e.notices.close()
	e.cancelBg()
	e.ads.stop()
	e.convs.Close()
	e.log.Info("Shutdown complete")
	return nil
}

// WaitIdle returns when no turn runs and no queue holds work, or when ctx
// ends.
func (e *Engine) WaitIdle(ctx context.Context) error {
	return e.convs.WaitIdle(ctx)
}

func (e *Engine) isStopping() bool {
	select {
	case <-e.convs.Stopping():
		return true
	default:
		return false
	}
}

// refusedMemory is how many threads the access refusal is remembered for.
const refusedMemory = 4096

// Package conv is the conversation: one goroutine per conversation
// (platform, channel, thread) that takes its work in order and composes
// small parts, each readable alone: the mailbox (its FIFO and control
// lane), the journal (the inbox file: one accept, one fsync), the record
// (what survives a restart), the process slot, the relay (everything
// posted), the turn runner, the permission desk with Claude's questions
// and plans, the live view, the tail, and the chat commands. Set holds the
// conversations of one engine by key.
//
// A conversation reaches the rest of the engine only through Host, which
// the engine implements: the bindings and team settings in force, the
// adapter registered for a platform now, spawning a process, Claude
// Code's transcripts, posting without a conversation, the scheduler and
// the cluster's report. It never imports a platform library and never
// routes a message.
package conv

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/ctxindicator"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/spend"
)

// Host is the engine as its conversations reach it.
type Host interface {
	// Binding is the binding in force now for a platform's channel, its
	// workspace normalized; false when none binds it (a reload removed
	// it).
	Binding(platform, channel string) (binding.Binding, bool)
	// Team is the [chat] settings in force now.
	Team() TeamOptions
	// Chat is the adapter registered now for a platform instance (a
	// reload may have replaced the one a conversation started with).
	Chat(platform string) (platform.Adapter, bool)
	// Spawn starts a claude process; its ctx bounds the process's life.
	Spawn(ctx context.Context, cfg agentproc.Config, opts agentproc.StartOptions, log *slog.Logger) (procs.Process, error)
	// Transcripts reads Claude Code's session transcripts.
	Transcripts() procs.Transcripts
	// Notify posts text to a conversation without waiting for it, off
	// the caller's goroutine; false when it was dropped.
	Notify(a platform.Adapter, to platform.Target, text string) bool
	// Schedules is the scheduler behind !schedules, or nil.
	Schedules() Schedules
	// ClusterStatus is the cluster's part of !status: "" outside one.
	ClusterStatus() string
}

// Options are the settings every conversation reads. They do not change
// while the engine runs: what a reload changes is read through Host.
type Options struct {
	// Agent is the base agent config; AppendSystemPrompt is the admin's,
	// before the engine's own instructions are added (agentConfig).
	Agent                    agentproc.Config
	SelfReport               bool
	StateDir                 string
	IdleTimeout              time.Duration
	PermissionTimeout        time.Duration
	ApprovalReminder         time.Duration
	StallNotice              time.Duration
	LimitRetry               time.Duration // limits.go; 0: limitBackoff
	MaxTurnTime              time.Duration
	MaxProcessesPerWorkspace int
	QueueLimit               int
	ContextWindow            int64
	ShutdownGrace            time.Duration
	SeenWindow               time.Duration
	ShellTimeout             time.Duration
	ArtifactThreshold        int
	ArtifactQuota            int64
	AttachmentMaxBytes       int64
	AllowedModes             []string
	Spending                 *spend.Ledger
	SpendAdminsExempt        bool
	// ConsoleLinks issues a one-time sign-in link to the console for a
	// person (!console); nil when the console is off.
	ConsoleLinks func(platform, userID, userName string) (string, error)
}

// Deps are what a Set shares with the engine that made it: the process
// caps and the spare pool, the logger, the metrics, the clock.
type Deps struct {
	Host Host
	// BG outlives every process and platform call of the conversations;
	// the engine cancels it once they all ended (after Wait).
	BG      context.Context
	Caps    *procs.Caps
	Spares  *procs.Spares
	Log     *slog.Logger
	Metrics Metrics // never nil
	// Activity receives what happens in conversations (package activity);
	// never nil.
	Activity activity.Sink
	Now      func() time.Time
}

// Cluster is what a Set needs of the cluster (docs/cluster.md), set once
// before the engine runs; its zero value is a host alone.
type Cluster struct {
	// Clustered says whether a platform instance's conversations are fed
	// by the cluster's stream.
	Clustered func(platform string) bool
	// InStream says whether the ingress stream still holds the event of
	// sequence seq (false: it was settled, and nobody gets it again).
	InStream func(ctx context.Context, seq uint64) (bool, error)
	// Fence is the fence of this host's tenure of a binding (as the
	// config writes it) while it holds; nil otherwise.
	Fence func(platform, channel string) Fence
	// Answers is what the cluster's hosts answered; nil leaves a host
	// with what its own journal took (answered.go). Host is this host's
	// name in it.
	Answers Answers
	Host    string
	// AnsweredFor is how long the record keeps a message answered
	// (cluster.AnsweredTTL); 0: for ever.
	AnsweredFor time.Duration
	// Contexts keeps the conversations' context for the hosts that take
	// them over (context.go); nil: not replicated.
	Contexts Contexts
	// Replies keeps the replies being posted for the host that takes a
	// binding over (pendingreply.go); nil: a reply settled by a host
	// killed before it posted it waits for that host.
	Replies Replies
	// Approvals keeps the requests a conversation's turn waits on for
	// the host that takes the binding over (approvals.go); nil: that
	// host asks again.
	Approvals Approvals

	bg       context.Context // the Set's, for the stream's reads
	adopting *adoptions      // the requests adopted from another host, by conversation (approvals.go)
}

// TestHooks change a Set's waits and stop it at kill points, for tests;
// set them before the first message.
type TestHooks struct {
	// StopAt is called at the points where a kill decides what a restart
	// finds (killedAt); true stops the work there, as a kill would.
	StopAt func(point string) bool
	// BeforeTail is called on a turn's tail before its writes (tail.go):
	// a slow disk. TailAdded is called when a settled turn's tail is
	// added, its ack written.
	BeforeTail, TailAdded func()
	// TailQuiet and TailMaxWait are the tail's waits; zero keeps them.
	TailQuiet, TailMaxWait time.Duration
	// CompactBytes is the journals' compaction size; 0 = inbox's default.
	CompactBytes int64
	// RetireAfter and FetchTimeout replace their defaults when set (a
	// negative RetireAfter: never).
	RetireAfter, FetchTimeout time.Duration
	// Queued runs on the accept path right after an item joined the FIFO
	// and the mailbox's lock was released.
	Queued func()
	// Looping runs on a conversation's goroutine before it takes its
	// first work: holding it there, a test has work arrive in the order
	// it needs before the goroutine looks (a control before the message
	// queued ahead of it).
	Looping func(key string)
	// BusyChanged runs after every change of the outstanding work's count
	// (busy.go), with its lock released.
	BusyChanged func(delta, n int)
	// HeaderWait is the first pause between tries to post a run's header.
	HeaderWait time.Duration
	// LimitAfter replaces the timer a conversation waits on for a usage
	// window's reset (limits.go): the test decides when it has come.
	LimitAfter func(time.Duration) <-chan time.Time
	// Born replaces when the engine started, which bounds how long after
	// it a thread is read back for messages a dead instance took
	// (checks.go).
	Born time.Time
}

// Set is the conversations of one engine, by key: it creates a
// conversation from its files on first use (and reopens, at start, those
// whose journals hold pending work), retires idle ones, and is what the
// engine's accept path, reload and shutdown go through.
type Set struct {
	lifecycle
	host Host
	opts Options
	// basePrompt is the admin's agent.append_system_prompt, before the
	// engine's own instructions are added (agentConfig); opts.Agent's
	// has the self-report instruction when it is on.
	basePrompt string
	log        *slog.Logger
	now        func() time.Time
	metrics    Metrics
	activity   activity.Sink // never nil
	store      *Store
	cfg        *settings
	threads    *threadChecks // which threads were read back (checks.go)
	warmth     *warmth       // the bindings with recent turns, across restarts (warmth.go)
	limits     *limitBook    // the logins' exhausted usage windows, across restarts (limits.go)
	spend      *spending
	slots      *procs.Caps
	spare      *procs.Spares
	cluster    Cluster

	jrs *journals // the journals' seen ids, opened on first use (journal.go)

	retireAfter  time.Duration // see defaultRetireAfter
	fetchTimeout time.Duration // see fetchTimeout
	stopAt       func(point string) bool
	beforeTail   func()
	tailAdded    func()
	tailQuiet    time.Duration
	tailMaxWait  time.Duration

	runs   runState   // runs without a person (trigger.go)
	reload staleMarks // conversations a reload marked to end once idle (reload.go)

	bg context.Context // Deps.BG

	mu       sync.Mutex // guards the fields below
	sessions map[string]*Conversation
	requests map[string]string // pending permission request id -> session key
	shutting bool

	// testHookQueued, when set (tests only), runs on the accept path
	// right after an item joined the FIFO and the mailbox's lock was
	// released.
	testHookQueued func()
	// testHookLooping, when set (tests only), runs on a conversation's
	// goroutine before it takes its first work.
	testHookLooping func(key string)
}

// NewSet makes a Set; it reads no file and starts nothing.
func NewSet(opts Options, d Deps) *Set {
	basePrompt := opts.Agent.AppendSystemPrompt
	if opts.SelfReport {
		opts.Agent.AppendSystemPrompt = joinPrompt(opts.Agent.AppendSystemPrompt, ctxindicator.SelfReportInstruction)
	}
	s := &Set{
		host: d.Host, opts: opts, basePrompt: basePrompt, log: d.Log, now: d.Now, metrics: MetricsOf(d.Metrics), activity: activity.Or(d.Activity),
		store: &Store{dir: opts.StateDir}, slots: d.Caps, spare: d.Spares,
		spend:       &spending{ledger: opts.Spending, adminsExempt: opts.SpendAdminsExempt, clock: d.Now},
		retireAfter: defaultRetireAfter, fetchTimeout: fetchTimeout, tailQuiet: tailQuiet, tailMaxWait: tailMaxWait,
		bg: d.BG, lifecycle: lifecycle{busy: newBusyCount(), stopping: make(chan struct{})},
		sessions: map[string]*Conversation{}, requests: map[string]string{},
	}
	s.jrs = &journals{stateDir: opts.StateDir, seenWindow: opts.SeenWindow, queueLimit: opts.QueueLimit, now: d.Now, log: d.Log}
	s.threads = newThreadChecks(d.Now())
	s.warmth = newWarmth(opts.StateDir, d.Log)
	s.limits = newLimitBook(opts.StateDir, d.Now, d.Log)
	if opts.LimitRetry > 0 {
		s.limits.first = opts.LimitRetry
	}
	s.cfg = &settings{opts: opts, basePrompt: basePrompt, host: d.Host}
	s.runs.init(opts.StateDir, d.Log, d.Host.Schedules)
	return s
}

// SetTestHooks sets the hooks of h that are set (TestHooks), keeping the
// others; call it before the first message, or, for the busy count's, at
// any time.
func (e *Set) SetTestHooks(h TestHooks) {
	set := func(dst *time.Duration, v time.Duration) {
		if v != 0 {
			*dst = v
		}
	}
	if h.StopAt != nil {
		e.stopAt = h.StopAt
	}
	if h.BeforeTail != nil {
		e.beforeTail = h.BeforeTail
	}
	if h.TailAdded != nil {
		e.tailAdded = h.TailAdded
	}
	if h.Queued != nil {
		e.testHookQueued = h.Queued
	}
	if h.Looping != nil {
		e.testHookLooping = h.Looping
	}
	if h.CompactBytes != 0 {
		e.jrs.compactBytes = h.CompactBytes
	}
	set(&e.tailQuiet, h.TailQuiet)
	set(&e.tailMaxWait, h.TailMaxWait)
	set(&e.retireAfter, h.RetireAfter)
	set(&e.fetchTimeout, h.FetchTimeout)
	set(&e.runs.headerWait, h.HeaderWait)
	if h.LimitAfter != nil {
		e.limits.after = h.LimitAfter
	}
	if !h.Born.IsZero() {
		e.threads.born = h.Born
	}
	if h.BusyChanged != nil {
		e.busy.mu.Lock()
		e.busy.onAdd = h.BusyChanged
		e.busy.mu.Unlock()
	}
}

// JoinCluster feeds the conversations of clustered platforms from the
// cluster's stream (cluster.go); call it before the engine runs. The
// Stream is what the engine's ingress reaches them through.
func (e *Set) JoinCluster(c Cluster) *Stream {
	c.bg = e.bg
	c.adopting = &adoptions{}
	e.cluster = c
	return &Stream{e: e}
}

// clustered says whether the conversation of a platform instance is fed
// by the cluster's stream.
func (c *Cluster) clustered(plat string) bool {
	return c.Clustered != nil && c.Clustered(plat)
}

// resolve is the binding in force for a platform channel (Host.Binding).
func (e *Set) resolve(plat, channel string) (binding.Binding, bool) {
	return e.host.Binding(plat, channel)
}

// Stopping is closed when Stop was called.
func (e *lifecycle) Stopping() <-chan struct{} { return e.stopping }

// Stop refuses new conversations and tells the running ones to finish
// within the shutdown grace: what is queued stays in the journals.
func (e *Set) Stop() {
	e.mu.Lock()
	e.shutting = true
	e.mu.Unlock()
	close(e.stopping)
}

// Wait returns when every conversation's goroutine (and side question's
// and shell command's) has ended.
func (e *lifecycle) Wait() { e.wg.Wait() }

// Close writes the record of recent turns and closes the seen ids; call it
// after Wait.
func (e *Set) Close() {
	e.warmth.flush(e.now())
	if s := e.jrs.seenSet; s != nil {
		if err := s.Close(); err != nil {
			e.log.Warn("Closing the seen message ids failed", "error", err)
		}
	}
}

// WaitIdle returns when no turn runs and no queue holds work, or when ctx
// ends.
func (e *lifecycle) WaitIdle(ctx context.Context) error { return e.busy.wait(ctx) }

// Busy counts outstanding work of the engine's own (a notice in flight),
// which WaitIdle waits for too.
func (e *lifecycle) Busy(delta int) { e.busy.add(delta) }

func (e *lifecycle) isStopping() bool {
	select {
	case <-e.stopping:
		return true
	default:
		return false
	}
}

// lifecycle is what ends the conversations: the stop signal, the
// goroutines the engine waits for at shutdown, and the outstanding work
// WaitIdle waits on.
type lifecycle struct {
	busy     *busyCount    // outstanding work (busy.go); its lock is a leaf
	stopping chan struct{} // closed by Stop
	wg       sync.WaitGroup
}

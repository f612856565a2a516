package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/internal/testlog"
	"github.com/cc-connect/cc-connect/platform"
)

// waitLimit bounds every wait in these tests. Waits end on events long
// before it; it only decides how long a broken test takes to fail, and the
// real CLI on a loaded machine needs seconds per turn.
const waitLimit = 60 * time.Second

// harness runs an Engine against a fake platform and an agent spawner
// (the in-memory fake unless a test swaps it).
type harness struct {
	t        *testing.T
	e        *Engine
	fa       *fakeAgents
	rec      *fakePlatform
	ft       *fakeTranscripts
	ws       string
	logs     *testlog.Buffer
	cancel   context.CancelFunc
	runDone  chan error
	ids      atomic.Int64
	opts     Options
	cfg      *harnessConfig
	stopOnce sync.Once
}

type harnessConfig struct {
	plain   bool // a platform without optional interfaces
	threads bool // a rich platform with threads under posted messages (platform.Threader)
	real    bool // run the real agentproc driver (against the fake claude binary)
	// contexts: a cluster host replicates and restores its conversations'
	// context through its node (cluster_context_test.go).
	contexts bool
	fa       *fakeAgents
	files    *fakeFiles // what the platform's OpenAttachment serves, kept across restarts
	// stopAt is the engine's kill-point hook (Engine.stopAt); a restart
	// does not keep it.
	stopAt func(point string) bool
	// looping is the conversations' hook before their goroutine takes
	// its first work (conv.TestHooks.Looping); a cluster host's restart
	// does not keep it.
	looping func(key string)
	// beforeTail is Engine.beforeTail; a restart does not keep it.
	beforeTail func()
	// tailAdded is Engine.tailAdded; a restart does not keep it.
	tailAdded func()
	// tailQuiet and tailMaxWait, when set, are the engine's (tail.go).
	tailQuiet, tailMaxWait time.Duration
	// compactBytes is the journals' compaction size (0: the default).
	compactBytes int64
	// adapter, when set, is the adapter the engine gets for the
	// recording platform (team_test.go's, with history and files).
	adapter func(*fakePlatform) platform.Adapter
	// chat, when set, makes the platform a Replier and a HistoryReader
	// over it (replier_test.go), kept across restarts.
	chat *fakeChat
	// limitAfter, when set, is the usage windows' clock (limits_test.go),
	// in force before the engine runs; a restart does not keep it.
	limitAfter func(time.Duration) <-chan time.Time
	// transcripts, when set, wraps the engine's reads of Claude's
	// transcripts (kept across restarts).
	transcripts func(procs.Transcripts) procs.Transcripts
}

func newHarness(t *testing.T, mutate func(*Options, *harnessConfig)) *harness {
	t.Helper()
	cfg := &harnessConfig{}
	ws := t.TempDir()
	no := false
	opts := Options{
		Bindings: []binding.Binding{{Platform: "fake", Channel: "*", Workspace: ws,
			AllowUsers: []string{"alice", "bob"}, Admins: []string{"alice"}, RequireMention: &no,
			// The prompts the tests expect are the user's text alone;
			// team_test.go turns the header on.
			Setup: binding.Setup{SenderHeader: &no}}},
		StateDir:      t.TempDir(),
		ShutdownGrace: 2 * time.Second,
	}
	logs := &testlog.Buffer{}
	opts.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if mutate != nil {
		mutate(&opts, cfg)
	}
	return startHarness(t, opts, cfg, logs)
}

func startHarness(t *testing.T, opts Options, cfg *harnessConfig, logs *testlog.Buffer) *harness {
	t.Helper()
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	fa := cfg.fa
	if fa == nil {
		fa = newFakeAgents()
	}
	ft := &fakeTranscripts{fa: fa}
	e.convs.SetTestHooks(conv.TestHooks{StopAt: cfg.stopAt, BeforeTail: cfg.beforeTail, TailAdded: cfg.tailAdded,
		TailQuiet: cfg.tailQuiet, TailMaxWait: cfg.tailMaxWait, CompactBytes: cfg.compactBytes, LimitAfter: cfg.limitAfter})
	if !cfg.real {
		e.spawn = fa.spawn
		e.tx = ft
	}
	if cfg.transcripts != nil {
		e.tx = cfg.transcripts(e.tx)
	}
	if cfg.files == nil {
		cfg.files = &fakeFiles{data: map[string][]byte{}, opened: map[string]int{}}
	}
	rec := newFakePlatform("fake")
	rec.files = cfg.files
	switch {
	case cfg.adapter != nil:
		e.AddAdapter(cfg.adapter(rec))
	case cfg.chat != nil:
		e.AddAdapter(chatPlatform{richPlatform{rec}, cfg.chat})
	case cfg.plain:
		e.AddAdapter(rec)
	case cfg.threads:
		e.AddAdapter(threadedPlatform{richPlatform{rec}})
	default:
		e.AddAdapter(richPlatform{rec})
	}
	ws := ""
	if len(opts.Bindings) > 0 {
		ws = opts.Bindings[0].Workspace
	}
	cfg.fa = fa
	h := &harness{t: t, e: e, fa: fa, rec: rec, ft: ft, ws: ws, logs: logs, runDone: make(chan error, 1), opts: opts, cfg: cfg}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.runDone <- e.Run(ctx) }()
	t.Cleanup(h.stop)
	return h
}

// restart stops the engine and starts a new one on the same state dir and
// fake agents, as a restart of cc-connect would.
func (h *harness) restart() *harness {
	h.t.Helper()
	h.stop()
	cfg := *h.cfg
	cfg.stopAt, cfg.beforeTail, cfg.tailAdded, cfg.limitAfter = nil, nil, nil, nil
	nh := startHarness(h.t, h.opts, &cfg, h.logs)
	// Platform message ids are unique: a new message after a restart must
	// not reuse an id the persisted seen set remembers.
	nh.ids.Store(h.ids.Load())
	return nh
}

// stop cancels Run and waits for it; it fails the test if Run hangs.
func (h *harness) stop() {
	h.t.Helper()
	h.stopOnce.Do(func() {
		h.cancel()
		select {
		case <-h.runDone:
		case <-time.After(30 * time.Second):
			h.t.Error("Run did not return after cancel")
		}
	})
}

// message builds a message from user in channel C1, thread thread.
func (h *harness) message(user, thread, text string) platform.Message {
	n := h.ids.Add(1)
	return platform.Message{
		ID:       fmt.Sprintf("m%d", n),
		Target:   platform.Target{Platform: "fake", Channel: "C1", Thread: thread, MessageID: fmt.Sprintf("in-%d", n)},
		UserID:   user,
		UserName: user,
		Text:     text,
		Received: time.Now(),
	}
}

func (h *harness) say(user, thread, text string) {
	h.t.Helper()
	h.deliver(h.message(user, thread, text))
}

func (h *harness) deliver(m platform.Message) platform.Result {
	h.t.Helper()
	res, err := h.e.HandleMessage(context.Background(), m)
	if err != nil {
		h.t.Fatalf("HandleMessage(%q): %v", m.Text, err)
	}
	return res
}

// pending is how many messages the conversation's journal holds pending,
// as its session sees it (0 when it has no session in memory). The file
// itself may still hold acknowledged records: a journal is compacted at a
// size, or when it is closed.
func (h *harness) pending(key string) int {
	h.t.Helper()
	s := h.e.convs.Lookup(key)
	if s == nil {
		return 0
	}
	if !s.JournalOpen() {
		h.t.Fatalf("the journal of %s is not open", key)
	}
	return len(s.Pending())
}

// waitIdle waits until the engine has no work.
func (h *harness) waitIdle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.e.WaitIdle(ctx); err != nil {
		h.t.Fatalf("WaitIdle: %v", err)
	}
}

// pollFor checks cond until it holds or a deadline passes. Only for state
// that has no event to wait on (files written by other processes).
func pollFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

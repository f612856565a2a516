package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/engine/render"
)

func TestHelpAndUnknownCommands(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "!help")
	help := h.rec.waitSend(t, "Commands")
	for _, c := range []string{"!new", "!btw", "!stop", "!status", "!sessions", "!resume", "!allow", "!deny", "!compact", "!model", "!mode", "!sh"} {
		if !strings.Contains(help.Text, c) {
			t.Errorf("help lacks %s", c)
		}
	}
	h.say("alice", "T1", "!frobnicate")
	h.rec.waitSend(t, "Unknown command !frobnicate. Send !help")
	h.say("alice", "T1", "/context")
	h.rec.waitSend(t, "echo: /context")
	if n := len(h.fa.spawnsSnapshot()); n != 1 {
		t.Errorf("%d spawns, want only /context to reach the agent", n)
	}
}

func TestNewStartsFreshSession(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "first")
	h.waitIdle()
	h.say("alice", "T1", "!new")
	h.rec.waitSend(t, "Started a new session")
	h.fa.waitFor(t, "the process to close", func(fa *fakeAgents) bool { return fa.live == 0 })
	h.say("alice", "T1", "second")
	h.rec.waitSend(t, "echo: second")
	spawns := h.fa.spawnsSnapshot()
	if len(spawns) != 2 || spawns[1].ResumeID != "" {
		t.Errorf("spawns = %+v, want a fresh second session", spawns)
	}
	if got := h.fa.history(sess2); strings.Join(got, "|") != "second" {
		t.Errorf("new session history = %q", got)
	}
}

func TestBtwAnswersFromForkWithoutTouchingHistory(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "!btw anyone there?")
	h.rec.waitSend(t, "There is no session to ask about yet")

	h.say("alice", "T1", "first")
	h.waitIdle()
	// The side question is answered while a main turn runs.
	h.say("alice", "T1", "long [[WAIT]]")
	h.fa.waitFor(t, "the main turn", func(fa *fakeAgents) bool { return fa.waiting == 1 })
	h.say("bob", "T1", "!btw what did I say?")
	side := h.rec.waitSend(t, render.SidePrefix)
	if side.Text != render.SidePrefix+"echo: what did I say?" {
		t.Errorf("side answer = %q", side.Text)
	}
	h.fa.release(t)
	h.waitIdle()
	h.say("alice", "T1", "[[HISTORY]]")
	hist := h.rec.waitSend(t, "history:")
	if !strings.HasPrefix(hist.Text, "history: first | long [[WAIT]] | [[HISTORY]]\n") {
		t.Errorf("main history = %q, want it without the side question", hist.Text)
	}
	var fork *struct{ resume string }
	for _, s := range h.fa.spawnsSnapshot() {
		if s.Fork {
			fork = &struct{ resume string }{s.ResumeID}
		}
		if s.Fork != s.ReadOnly {
			t.Errorf("spawn %+v: a fork, and only a fork, must run read-only", s)
		}
	}
	if fork == nil || fork.resume != sess1 {
		t.Errorf("no fork of sess-1 among spawns %+v", h.fa.spawnsSnapshot())
	}
	h.fa.waitFor(t, "the side process to close", func(fa *fakeAgents) bool { return fa.live == 1 })
}

func TestStopInterruptsAndKeepsQueue(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "!stop")
	h.rec.waitSend(t, "Nothing is running.")
	h.say("alice", "T1", "forever [[HANG]]")
	h.fa.waitFor(t, "the turn to run", func(fa *fakeAgents) bool { return fa.waiting == 1 })
	h.say("alice", "T1", "next one")
	h.rec.waitSend(t, "Queued (position 1)")
	h.say("alice", "T1", "!stop")
	h.rec.waitSend(t, "1 queued message stays queued")
	h.rec.waitSend(t, "Stopped.")
	h.rec.waitSend(t, "echo: next one")
	if spawns := h.fa.spawnsSnapshot(); len(spawns) != 1 {
		t.Errorf("spawns = %+v, want the session kept in one process", spawns)
	}
}

func TestStatus(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "!status")
	before := h.rec.waitSend(t, "State:")
	for _, want := range []string{"State: idle", "Session: none yet", "Context: no figures yet", "Process: not running"} {
		if !strings.Contains(before.Text, want) {
			t.Errorf("status before a turn lacks %q:\n%s", want, before.Text)
		}
	}
	h.say("alice", "T1", "hello")
	h.waitIdle()
	h.say("alice", "T1", "!status")
	h.rec.waitFor(t, "a second status", func(calls []recorded) bool { return len(h.rec.sends("State:")) == 2 })
	st := h.rec.sends("State:")[1]
	ws := h.e.routes.pool.normalize(h.ws)
	for _, want := range []string{"State: idle", "Workspace: " + ws, "Session: " + sess1, "Context: 25%",
		"Queue: 0 waiting", "Process: alive, pid 4001", "Idle:", "Model: claude-test", "Cost: $0.0100", "Platform: connected"} {
		if !strings.Contains(st, want) {
			t.Errorf("status lacks %q:\n%s", want, st)
		}
	}
}

func TestSessionsAndResume(t *testing.T) {
	h := newHarness(t, nil)
	h.fa.mu.Lock()
	h.fa.sessions[old2] = []string{"earlier"}
	h.fa.mu.Unlock()
	h.ft.list = []procs.SessionInfo{
		{SessionID: old1, Size: 2048, ModTime: time.Now().Add(-time.Hour), FirstPrompt: "fix the login bug"},
		{SessionID: old2, Size: 3 << 20, ModTime: time.Now().Add(-49 * time.Hour), FirstPrompt: "write docs"},
	}
	h.say("bob", "T1", "!sessions")
	list := h.rec.waitSend(t, "Sessions in")
	for _, want := range []string{"1. " + old1, "2 KB", "fix the login bug", "2. " + old2, "3.0 MB", "2d ago", "write docs", "!resume <n>"} {
		if !strings.Contains(list.Text, want) {
			t.Errorf("listing lacks %q:\n%s", want, list.Text)
		}
	}
	if i, j := strings.Index(list.Text, old1), strings.Index(list.Text, old2); i > j {
		t.Errorf("listing is not in the lister's newest-first order")
	}
	h.say("bob", "T1", "!resume 2")
	h.rec.waitSend(t, "Switched to session "+old2)
	h.say("bob", "T1", "continue")
	h.rec.waitSend(t, "echo: continue")
	if spawns := h.fa.spawnsSnapshot(); len(spawns) != 1 || spawns[0].ResumeID != old2 {
		t.Errorf("spawns = %+v, want --resume old-2", spawns)
	}
	h.say("bob", "T1", "!resume 7")
	h.rec.waitSend(t, "There is no session 7")
}

func TestResumeOfUnlistedIDIsAdminOnly(t *testing.T) {
	h := newHarness(t, nil)
	const elsewhere = "5d6e7f80-1a2b-4c3d-8e9f-0a1b2c3d4e5f"
	h.say("bob", "T1", "!resume "+elsewhere)
	h.rec.waitSend(t, "Only an admin can resume")
	h.say("alice", "T1", "!resume "+elsewhere)
	h.rec.waitSend(t, "Switched to session "+elsewhere)
}

// TestResumeRefusesIDsThatCouldBeFlags: claude's --resume takes an optional
// value, so "--dangerously-skip-permissions" given as an id would turn off
// permission prompts. Even an admin gets a refusal for anything but a UUID.
func TestResumeRefusesIDsThatCouldBeFlags(t *testing.T) {
	h := newHarness(t, nil)
	for _, id := range []string{"--dangerously-skip-permissions", "-p", "elsewhere-1"} {
		h.say("alice", "T1", "!resume "+id)
		h.rec.waitSend(t, "not a Claude Code session id")
	}
	if got := h.rec.sends("Switched to session"); len(got) != 0 {
		t.Errorf("switched anyway: %v", got)
	}
}

func TestBindingPathsNormalizeToOneWorkspace(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "proj")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	realResolved, err := filepath.EvalSymlinks(real)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(o *Options, _ *harnessConfig) {
		o.Bindings = []binding.Binding{
			{Platform: "fake", Channel: "C1", Workspace: real + "/", AllowUsers: []string{"*"}, RequireMention: new(bool), Setup: binding.Setup{SenderHeader: new(bool)}},
			{Platform: "fake", Channel: "C2", Workspace: link, AllowUsers: []string{"*"}, RequireMention: new(bool), Setup: binding.Setup{SenderHeader: new(bool)}},
			{Platform: "fake", Channel: "*", Workspace: filepath.Join(real, "..", "proj"), AllowUsers: []string{"*"}, RequireMention: new(bool), Setup: binding.Setup{SenderHeader: new(bool)}},
		}
		o.MaxProcessesPerWorkspace = 1
	})
	for i, ch := range []string{"C1", "C2", "C3"} {
		m := h.message("anyone", "", fmt.Sprintf("hello %d", i))
		m.Target.Channel = ch
		h.deliver(m)
		h.rec.waitSend(t, fmt.Sprintf("echo: hello %d", i))
	}
	for _, s := range h.fa.spawnsSnapshot() {
		if s.Dir != realResolved {
			t.Errorf("spawn dir = %q, want %q", s.Dir, realResolved)
		}
	}
	for _, ch := range []string{"C1", "C2", "C3"} {
		if ws := h.e.convs.Lookup("fake/" + ch + "/").Record().Workspace; ws != realResolved {
			t.Errorf("%s's workspace = %q, want %q", ch, ws, realResolved)
		}
	}
	// One workspace, one cap: the later channels reaped the earlier idle
	// process rather than run a second one beside it.
	h.fa.mu.Lock()
	maxLive := h.fa.maxLive
	h.fa.mu.Unlock()
	if maxLive != 1 {
		t.Errorf("max live = %d, want 1 under a per-workspace cap of 1", maxLive)
	}
}

func TestResolveExactChannelBeatsWildcard(t *testing.T) {
	e, err := New(Options{StateDir: t.TempDir(), Bindings: []binding.Binding{
		{Platform: "p", Channel: "*", Workspace: "/w/any"},
		{Platform: "p", Channel: "C1", Workspace: "/w/one/"},
		{Platform: "q", Channel: "C1", Workspace: "/w/q"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		plat, ch, want string
		ok             bool
	}{
		{"p", "C1", "/w/one", true},
		{"p", "C9", "/w/any", true},
		{"q", "C1", "/w/q", true},
		{"q", "C2", "", false},
		{"r", "C1", "", false},
	}
	for _, tt := range tests {
		b, ok := e.routes.resolve(tt.plat, tt.ch)
		if ok != tt.ok || b.Workspace != tt.want {
			t.Errorf("resolve(%s, %s) = %q, %v; want %q, %v", tt.plat, tt.ch, b.Workspace, ok, tt.want, tt.ok)
		}
	}
}

// Should the CLI ever start a side question with a tool that can change
// the workspace (read-only flags ignored), the fork is stopped and its
// answer is not posted.
func TestBtwStopsAForkThatCouldWrite(t *testing.T) {
	h := newHarness(t, nil)
	h.fa.mu.Lock()
	h.fa.ignoreReadOnly = true
	h.fa.mu.Unlock()
	h.say("alice", "T1", "first")
	h.waitIdle()
	h.say("alice", "T1", "!btw edit the file")
	got := h.rec.waitSend(t, render.SidePrefix)
	if got.Text != render.SidePrefix+"not answered: the agent started with a tool that can change the workspace (Bash), so it was stopped." {
		t.Errorf("side answer = %q", got.Text)
	}
	if recs := h.logs.Records("Side-question process could change the workspace; killing it"); len(recs) != 1 {
		t.Errorf("kill log = %v", recs)
	}
}

// A fork that reports the read-only tools but not plan mode (the CLI
// dropped --permission-mode plan) is stopped as well: another mode could
// let a tool run without asking, and the answer is not posted.
func TestBtwStopsAForkOutsidePlanMode(t *testing.T) {
	for _, mode := range []string{"default", "acceptEdits", "bypassPermissions"} {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t, nil)
			h.fa.mu.Lock()
			h.fa.readOnlyMode = mode
			h.fa.mu.Unlock()
			h.say("alice", "T1", "first")
			h.waitIdle()
			h.say("alice", "T1", "!btw what did you do")
			got := h.rec.waitSend(t, render.SidePrefix)
			if want := render.SideWritable("permission mode " + mode); got.Text != want {
				t.Errorf("side answer = %q, want %q", got.Text, want)
			}
			if recs := h.logs.Records("Side-question process could change the workspace; killing it"); len(recs) != 1 {
				t.Errorf("kill log = %v", recs)
			}
			for _, r := range h.rec.snapshot() {
				if strings.Contains(r.Text, "echo: what did you do") {
					t.Errorf("the stopped fork's answer was posted: %q", r.Text)
				}
			}
		})
	}
}

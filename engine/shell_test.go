package engine

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/render"
)

// shellHarness is a harness whose binding lets its admin (alice) run !sh.
func shellHarness(t *testing.T, mutate func(*Options)) *harness {
	t.Helper()
	return newHarness(t, func(o *Options, _ *harnessConfig) {
		o.Bindings[0].AllowShell = true
		if mutate != nil {
			mutate(o)
		}
	})
}

func TestShellRefusals(t *testing.T) {
	tests := []struct {
		name       string
		allowShell bool
		user       string
		want       string
		reason     string
	}{
		{"off by default, even for an admin", false, "alice", render.ShellOffText, "shell is off for this binding"},
		{"on, but not an admin", true, "bob", render.ShellNotAdminText, "user is not an admin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(o *Options, _ *harnessConfig) { o.Bindings[0].AllowShell = tt.allowShell })
			h.say(tt.user, "T1", "!sh touch ran.txt")
			h.rec.waitSend(t, tt.want)
			h.waitIdle()
			if _, err := os.Stat(filepath.Join(h.ws, "ran.txt")); err == nil {
				t.Error("the refused command ran")
			}
			recs := h.logs.Records("Refused a shell command")
			if len(recs) != 1 || recs[0]["reason"] != tt.reason || recs[0]["user_id"] != tt.user {
				t.Errorf("refusal log = %v", recs)
			}
		})
	}
}

func TestShellRunsInWorkspaceWithAgentEnv(t *testing.T) {
	h := shellHarness(t, func(o *Options) {
		o.Agent.Env = map[string]string{"CCC_SHELL_PROBE": "from-agent-env"}
	})
	h.say("alice", "T1", `!sh pwd; echo "probe=$CCC_SHELL_PROBE"; exit 3`)
	got := h.rec.waitSend(t, "exit 3 in")
	wantDir := h.e.routes.pool.normalize(h.ws)
	if !strings.Contains(got.Text, wantDir+"\n") || !strings.Contains(got.Text, "probe=from-agent-env") ||
		!strings.Contains(got.Text, "```") {
		t.Errorf("reply = %q, want the workspace, the agent's env, a code block", got.Text)
	}
	if h.fa.spawnsSnapshot() != nil {
		t.Error("!sh started an agent process")
	}
}

func TestShellNoteReachesNextTurnOnce(t *testing.T) {
	h := shellHarness(t, nil)
	h.say("alice", "T1", "!sh echo failing test output; exit 1")
	h.rec.waitSend(t, "exit 1 in")
	h.waitIdle()
	h.say("alice", "T1", "look at the failure")
	h.rec.waitSend(t, "echo: ")
	h.say("bob", "T1", "and again")
	h.rec.waitSend(t, "and again")
	h.waitIdle()
	hist := h.fa.history(sess1)
	if len(hist) != 2 {
		t.Fatalf("history = %q, want two turns", hist)
	}
	first := hist[0]
	for _, want := range []string{"Command: echo failing test output; exit 1", "exit 1 in", "failing test output", "look at the failure"} {
		if !strings.Contains(first, want) {
			t.Errorf("first turn lacks %q:\n%s", want, first)
		}
	}
	if strings.Index(first, "failing test output") > strings.Index(first, "look at the failure") {
		t.Error("the note comes after the user's message, want it first")
	}
	if hist[1] != "and again" {
		t.Errorf("second turn = %q, want the message alone (the note is told once)", hist[1])
	}
}

func TestShellOutputBounded(t *testing.T) {
	h := shellHarness(t, nil)
	h.say("alice", "T1", `!sh head -c 300000 /dev/zero | tr '\0' x; echo; echo the-end`)
	got := h.rec.waitSend(t, "exit 0 in")
	if !strings.Contains(got.Text, "(output cut: only the last part is shown)") || !strings.Contains(got.Text, "the-end") {
		t.Errorf("reply does not say the output was cut or lacks its tail: %q…", conv.Quote(got.Text, 200))
	}
	if len(got.Text) > 64<<10+1024 {
		t.Errorf("reply is %d bytes, want the last 64 KiB and a header", len(got.Text))
	}
	h.waitIdle()
	h.say("alice", "T1", "what happened?")
	h.rec.waitSend(t, "what happened?")
	hist := h.fa.history(sess1)
	if len(hist) != 1 || len(hist[0]) > 6<<10 || !strings.Contains(hist[0], "the-end") {
		t.Errorf("turn with the note is %d bytes, want a bounded note with the tail", len(strings.Join(hist, "")))
	}
}

// childPid starts the command's tree shape: a background grandchild
// whose pid lands in child.pid, and a shell that waits on it.
const treeCommand = "!sh sleep 60 & echo $! > child.pid; wait"

func readChildPid(t *testing.T, ws string) int {
	t.Helper()
	var pid int
	pollFor(t, "child.pid", func() bool {
		data, err := os.ReadFile(filepath.Join(ws, "child.pid"))
		if err != nil || !strings.HasSuffix(string(data), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	})
	return pid
}

// processGone reports whether pid no longer runs (a zombie counts as
// gone: it waits only for its reaper).
func processGone(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	return len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
}

func TestShellKillsTheTree(t *testing.T) {
	tests := []struct {
		name  string
		stop  func(h *harness)
		reply string
	}{
		{"timeout", nil, "killed by timeout after"},
		{"!stop", func(h *harness) { h.say("alice", "T1", "!stop") }, "stopped after"},
		{"shutdown", func(h *harness) { h.stop() }, "stopped after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := shellHarness(t, func(o *Options) {
				if tt.stop == nil {
					o.ShellTimeout = 300 * time.Millisecond
				}
			})
			h.say("alice", "T1", treeCommand)
			pid := readChildPid(t, h.ws)
			if tt.stop != nil {
				tt.stop(h)
			}
			h.rec.waitSend(t, tt.reply)
			pollFor(t, "the background child to die", func() bool { return processGone(pid) })
			if tt.name == "!stop" {
				if got := h.rec.sends("Stopping the shell command."); len(got) != 1 {
					t.Errorf("stop replies = %q", got)
				}
				if got := h.rec.sends("Nothing is running."); len(got) != 0 {
					t.Errorf("!stop also said %q", got)
				}
			}
		})
	}
}

func TestShellOneAtATime(t *testing.T) {
	h := shellHarness(t, nil)
	h.say("alice", "T1", treeCommand)
	readChildPid(t, h.ws)
	h.say("alice", "T1", "!sh echo second")
	h.rec.waitSend(t, render.ShellBusyText)
	h.say("alice", "T1", "!stop")
	h.rec.waitSend(t, "stopped after")
	h.waitIdle()
	h.say("alice", "T1", "!sh echo second")
	h.rec.waitSend(t, "exit 0 in")
}

// sessionFor creates the session of thread in channel C1 (with !help) and
// returns it.
func sessionFor(t *testing.T, h *harness, thread string) *conv.Conversation {
	t.Helper()
	h.say("alice", thread, "!help")
	h.rec.waitSend(t, "Commands (prefix")
	s := h.e.convs.Lookup("fake/C1/" + thread)
	if s == nil {
		t.Fatal("no session")
	}
	return s
}

// A session with a running !sh is not retired: the command writes its
// note to the session's record when it ends.
func TestShellKeepsSessionFromRetiring(t *testing.T) {
	h := shellHarness(t, nil)
	s := sessionFor(t, h, "T1")
	h.say("alice", "T1", treeCommand)
	readChildPid(t, h.ws)
	if s.RetireIfIdle() {
		t.Fatal("retired a session whose shell command runs")
	}
	h.say("alice", "T1", "!stop")
	h.rec.waitSend(t, "stopped after")
	h.waitIdle()
	if !s.RetireIfIdle() {
		t.Error("the session could not retire once the command ended")
	}
}

// Through the real driver: the fake claude records the note in the first
// user line after the command, and only there.
func TestDriverShellNoteOnce(t *testing.T) {
	h, re := newRealHarness(t, nil, func(o *Options) { o.Bindings[0].AllowShell = true })
	h.say("alice", "T1", "!sh echo hi-from-shell")
	h.rec.waitSend(t, "exit 0 in")
	h.waitIdle()
	h.say("alice", "T1", "next")
	h.rec.waitSend(t, "echo: ")
	h.say("alice", "T1", "again")
	h.rec.waitSend(t, "echo: again")
	lines := readRecord(t, re.record)
	if len(lines) != 2 {
		t.Fatalf("record = %+v, want two user lines", lines)
	}
	if !strings.Contains(lines[0].Text, "Command: echo hi-from-shell") || !strings.HasSuffix(lines[0].Text, "\n\nnext") {
		t.Errorf("first line = %q, want the note then the message", lines[0].Text)
	}
	if lines[1].Text != "again" {
		t.Errorf("second line = %q, want the message alone", lines[1].Text)
	}
}

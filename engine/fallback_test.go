package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/render"
)

// TestFallbackToFreshSession covers the session that cannot continue: its
// resume is refused, or a turn (the first after resume, or a later one in a
// warm process) fails with prompt too long. Each time the notice is posted
// once, the message is resent once to a fresh session, and the stored id is
// replaced.
func TestFallbackToFreshSession(t *testing.T) {
	tests := []struct {
		name   string
		breakS func(h *harness) *harness // breaks sess-1, returns the harness to continue on
		notice string
	}{
		{"resume not found", func(h *harness) *harness {
			h.fa.mu.Lock()
			delete(h.fa.sessions, sess1)
			h.fa.mu.Unlock()
			return h.restart()
		}, render.NoticeNotFound},
		{"too long on resume", func(h *harness) *harness {
			h.fa.mu.Lock()
			h.fa.poisoned[sess1] = true
			h.fa.mu.Unlock()
			return h.restart()
		}, render.NoticeTooLong},
		{"too long on a later turn", func(h *harness) *harness {
			h.fa.mu.Lock()
			h.fa.poisoned[sess1] = true
			h.fa.mu.Unlock()
			return h
		}, render.NoticeTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.say("alice", "T1", "first")
			h.rec.waitSend(t, "echo: first")
			h.waitIdle()
			h = tt.breakS(h)
			h.say("alice", "T1", "second")
			h.rec.waitSend(t, "echo: second")
			h.waitIdle()

			if got := h.rec.sends(tt.notice); len(got) != 1 {
				t.Errorf("notice %q posted %d times, want once", tt.notice, len(got))
			}
			if got := h.rec.sends("echo: second"); len(got) != 1 {
				t.Errorf("reply posted %d times, want once", len(got))
			}
			spawns := h.fa.spawnsSnapshot()
			last := spawns[len(spawns)-1]
			if last.ResumeID != "" {
				t.Errorf("last spawn resumed %q, want a fresh session", last.ResumeID)
			}
			if got := h.fa.history(sess2); strings.Join(got, "|") != "second" {
				t.Errorf("fresh session history = %q, want the message resent once", got)
			}
			var rec conv.Record
			data, err := os.ReadFile(conv.NewStore(h.opts.StateDir).Path("fake/C1/T1"))
			if err != nil || json.Unmarshal(data, &rec) != nil || rec.SessionID != sess2 {
				t.Errorf("stored session = %q (%v), want sess-2", rec.SessionID, err)
			}
			errs := h.logs.Records("Agent session cannot continue; starting fresh")
			if len(errs) != 1 || errs[0]["session_id"] != sess1 || errs[0]["level"] != "ERROR" || errs[0]["workspace"] == nil || errs[0]["cwd"] != nil {
				t.Errorf("failure log = %v", errs)
			}
			warns := h.logs.Records("Started a fresh agent session in place of a failed one")
			if len(warns) != 1 || warns[0]["old_session_id"] != sess1 || warns[0]["session_id"] != sess2 || warns[0]["level"] != "WARN" {
				t.Errorf("fallback log = %v", warns)
			}
		})
	}
}

func TestFreshFallbackFailingToo(t *testing.T) {
	tests := []struct {
		name    string
		second  string
		setup   func(fa *fakeAgents)
		failure string
	}{
		{"fresh process crashes", "second", func(fa *fakeAgents) {
			fa.poisoned[sess1] = true
			fa.failFresh = &agentproc.ExitError{Code: 1, StderrTail: "Not logged in · Please run /login"}
		}, "Not logged in · Please run /login"},
		{"the message itself is too long", "huge [[TOOLONG]]", func(fa *fakeAgents) {}, "does not fit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.say("alice", "T1", "first")
			h.waitIdle()
			h.fa.mu.Lock()
			tt.setup(h.fa)
			h.fa.mu.Unlock()
			h.say("alice", "T1", tt.second)
			failed := h.rec.waitSend(t, "Starting a fresh session failed too")
			if !strings.Contains(failed.Text, tt.failure) {
				t.Errorf("failure message = %q, want it to contain %q", failed.Text, tt.failure)
			}
			h.waitIdle()
			h.fa.mu.Lock()
			h.fa.failFresh = nil
			h.fa.mu.Unlock()
			h.say("alice", "T1", "third")
			h.rec.waitSend(t, "echo: third")
			if got := h.rec.sends(render.NoticeTooLong); len(got) != 1 {
				t.Errorf("notice posted %d times, want once", len(got))
			}
		})
	}
}

func TestFirstMessageTooLongForFreshSession(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "huge [[TOOLONG]]")
	h.rec.waitSend(t, "does not fit in the model's context even in a fresh session")
	h.say("alice", "T1", "small")
	h.rec.waitSend(t, "echo: small")
	if got := h.rec.sends(render.NoticeTooLong); len(got) != 0 {
		t.Errorf("fallback notice posted for a session without history: %q", got)
	}
	if spawns := h.fa.spawnsSnapshot(); len(spawns) != 2 || spawns[1].ResumeID != "" {
		t.Errorf("spawns = %+v, want two fresh sessions", spawns)
	}
}

func TestCrashMidTurnKeepsSession(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "first")
	h.waitIdle()
	h.say("alice", "T1", "boom [[CRASH]]")
	crash := h.rec.waitSend(t, "The agent process exited")
	if !strings.Contains(crash.Text, "code 1") || !strings.Contains(crash.Text, "Not logged in · Please run /login") {
		t.Errorf("crash message = %q, want the exit code and the stderr's last line", crash.Text)
	}
	h.waitIdle()
	// The turn is recovered once: the transcript holds the message and
	// ends cut, so the session is resumed with the continuation prompt.
	if got := h.rec.sends("Recovering the turn once. The turn for “boom [[CRASH]]” was cut off; resuming it"); len(got) != 1 {
		t.Errorf("recovery notices = %q, want one", got)
	}
	h.rec.waitSend(t, "echo: "+conv.ContinueText)
	if got := h.rec.sends("The agent process exited"); len(got) != 1 {
		t.Errorf("crash messages = %q, want one", got)
	}
	h.say("alice", "T1", "after")
	h.rec.waitSend(t, "echo: after")
	h.waitIdle()
	spawns := h.fa.spawnsSnapshot()
	if len(spawns) != 2 || spawns[1].ResumeID != sess1 {
		t.Errorf("spawns = %+v, want the recovery to resume sess-1 and the next message to find it live", spawns)
	}
	if got := h.rec.kinds("react"); len(got) == 0 {
		t.Error("no reactions recorded")
	} else {
		var names []string
		for _, r := range got {
			names = append(names, r.Text)
		}
		if strings.Join(names, ",") != "eyes,white_check_mark,eyes,x,eyes,white_check_mark,eyes,white_check_mark" {
			t.Errorf("reactions = %v", names)
		}
	}
}

func TestSessionStatePersistence(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "first")
	h.waitIdle()
	path := conv.NewStore(h.opts.StateDir).Path("fake/C1/T1")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	di, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Errorf("modes = %v in %v, want 0600 in 0700", fi.Mode().Perm(), di.Mode().Perm())
	}
	var rec conv.Record
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.SessionID != sess1 || rec.ContextTokens != 50000 || rec.ContextWindow != 200000 || rec.ContextPct != 25 ||
		rec.Model != "claude-test" || rec.Workspace != h.e.routes.pool.normalize(h.ws) {
		t.Errorf("stored record = %+v", rec)
	}

	// A corrupt file is moved aside, reported, and never silently replaced.
	h.stop()
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	h = h.restart()
	h.say("alice", "T1", "second")
	h.rec.waitSend(t, "was unreadable and has been moved aside")
	h.rec.waitSend(t, "echo: second")
	matches, _ := filepath.Glob(path + ".corrupt-*")
	if len(matches) != 1 {
		t.Fatalf("quarantined files = %v, want one", matches)
	}
	if data, _ := os.ReadFile(matches[0]); string(data) != "{not json" {
		t.Errorf("quarantined content = %q", data)
	}
	if spawns := h.fa.spawnsSnapshot(); spawns[len(spawns)-1].ResumeID != "" {
		t.Errorf("spawned with resume %q after a corrupt state, want fresh", spawns[len(spawns)-1].ResumeID)
	}
}

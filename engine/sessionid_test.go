package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/inbox"
)

// Session ids that are not UUIDs (a transcript file named like a flag, an
// id from the CLI's init event, a record edited by hand) are never listed,
// stored or resumed: claude's --resume takes an optional value, and a
// stored id the CLI refuses wedged the conversation, every message failing.

func TestSessionsListLeavesOutIDsThatAreNotUUIDs(t *testing.T) {
	h := newHarness(t, nil)
	h.fa.mu.Lock()
	h.fa.sessions[old1] = []string{"earlier"}
	h.fa.mu.Unlock()
	h.ft.list = []procs.SessionInfo{
		{SessionID: "--dangerously-skip-permissions", Size: 10, ModTime: time.Now(), FirstPrompt: "planted"},
		{SessionID: old1, Size: 2048, ModTime: time.Now().Add(-time.Hour), FirstPrompt: "fix the login bug"},
		{SessionID: "notes", BadID: true, ModTime: time.Now()},
	}
	h.say("bob", "T1", "!sessions")
	list := h.rec.waitSend(t, "Sessions in")
	if strings.Contains(list.Text, "dangerously") || strings.Contains(list.Text, "planted") || !strings.Contains(list.Text, "1. "+old1) {
		t.Errorf("listing:\n%s\nwant only %s, as 1", list.Text, old1)
	}
	if !strings.Contains(list.Text, "2 transcript file(s) whose name is not a Claude Code session id were left out") {
		t.Errorf("listing does not say what it left out:\n%s", list.Text)
	}
	h.say("bob", "T1", "!resume 1")
	h.rec.waitSend(t, "Switched to session "+old1)
	h.say("bob", "T1", "continue")
	h.rec.waitSend(t, "echo: continue")
	if spawns := h.fa.spawnsSnapshot(); len(spawns) != 1 || spawns[0].ResumeID != old1 {
		t.Errorf("spawns = %+v, want --resume %s", spawns, old1)
	}
}

// TestInitEventWithAnIDThatIsNotAUUID: an id like that from the CLI is not
// stored, so the next process is not started with --resume on it.
func TestInitEventWithAnIDThatIsNotAUUID(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.IdleTimeout = 10 * time.Millisecond })
	h.say("alice", "T1", "first [[BADID]]")
	h.rec.waitSend(t, "echo: first")
	h.fa.waitFor(t, "the idle process to be reaped", func(fa *fakeAgents) bool { return fa.live == 0 })
	if id := h.e.convs.Lookup(t1Key).Record().SessionID; id == badSessionID {
		t.Fatalf("stored session id %q", id)
	}
	if len(h.logs.Records("Agent reported a session id that is not a UUID; not stored")) == 0 {
		t.Error("the refused id was not logged")
	}
	h.say("alice", "T1", "second")
	h.rec.waitSend(t, "echo: second")
	for _, sp := range h.fa.spawnsSnapshot() {
		if sp.ResumeID == badSessionID || sp.SessionID == badSessionID {
			t.Errorf("a process was started on %q: %+v", badSessionID, sp)
		}
	}
}

// TestRecordWithAnIDThatIsNotAUUID: a record edited by hand to hold a
// session id the CLI refuses is cleaned on load, the thread is told, and
// the conversation goes on in a new session (with the real driver, which
// refuses such an id, every message used to fail).
func TestRecordWithAnIDThatIsNotAUUID(t *testing.T) {
	for _, field := range []string{"session_id", "new_session_id"} {
		t.Run(field, func(t *testing.T) {
			h, re := newRealHarness(t, nil, nil)
			rec := conv.Record{Key: t1Key, Platform: "fake", Channel: "C1", Thread: "T1", Workspace: h.e.routes.pool.normalize(h.ws)}
			if field == "session_id" {
				rec.SessionID = "--dangerously-skip-permissions"
			} else {
				rec.NewSessionID = "../../elsewhere"
			}
			if err := conv.NewStore(h.opts.StateDir).Save(rec); err != nil {
				t.Fatal(err)
			}
			h.say("alice", "T1", "hello")
			h.rec.waitSend(t, "stored Claude Code session id is not a valid session id, so it was dropped")
			h.rec.waitSend(t, "echo: hello")
			h.say("alice", "T1", "again")
			h.rec.waitSend(t, "echo: again")
			if got := h.rec.sends("The agent failed"); len(got) != 0 {
				t.Errorf("turns failed: %q", got)
			}
			if n := len(readRecord(t, re.record)); n != 2 {
				t.Errorf("claude received %d messages, want 2", n)
			}
			got, ok, err := conv.NewStore(h.opts.StateDir).Load(t1Key, time.Now())
			if err != nil || !ok || !agentproc.ValidSessionID(got.SessionID) || got.NewSessionID != "" {
				t.Errorf("stored record %+v (%v), want a new valid session id", got, err)
			}
		})
	}
}

// TestResumeFromAJournalWithAnIDThatIsNotAUUID: a !resume replayed from a
// journal edited by hand is refused, not stored.
func TestResumeFromAJournalWithAnIDThatIsNotAUUID(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "first")
	h.rec.waitSend(t, "echo: first")
	h.waitIdle()
	h.stop()
	in, err := inbox.Open(conv.InboxPath(h.opts.StateDir, t1Key), inbox.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := h.message("alice", "T1", "!resume --dangerously-skip-permissions")
	if err := in.Append(inbox.Entry{ID: m.ID, Platform: m.Target.Platform, Channel: m.Target.Channel, Thread: m.Target.Thread, MessageID: m.Target.MessageID, UserID: "alice", Text: m.Text, Kind: "resume:" + "--dangerously-skip-permissions"}); err != nil {
		t.Fatal(err)
	}
	in.Close()
	h = h.restart()
	h.rec.waitSend(t, "That is not a Claude Code session id, so the conversation keeps its session.")
	h.waitIdle()
	h.say("alice", "T1", "second")
	h.rec.waitSend(t, "echo: second")
	if spawns := h.fa.spawnsSnapshot(); spawns[len(spawns)-1].ResumeID != sess1 {
		t.Errorf("last spawn %+v, want the conversation's own session resumed", spawns[len(spawns)-1])
	}
}

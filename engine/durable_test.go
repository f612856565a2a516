package engine

import (
	"bytes"
	"context"
	"github.com/cc-connect/cc-connect/platform"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/lease"
)

const t1Key = "fake/C1/T1"

// stageCutTurn leaves what a crash in the middle of alice's turn in T1
// leaves: the conversation's record (rec, with its key and workspace
// filled in) and text in its inbox, started as turn u.
func stageCutTurn(t *testing.T, h *harness, rec conv.Record, u, text string) {
	t.Helper()
	stageCutTurnAs(t, h, h.message("alice", "T1", text), rec, u)
}

// stageCutTurnAs is stageCutTurn for the message m.
func stageCutTurnAs(t *testing.T, h *harness, m platform.Message, rec conv.Record, u string) {
	t.Helper()
	text := m.Text
	rec.Key, rec.Platform, rec.Channel, rec.Thread = t1Key, "fake", "C1", "T1"
	rec.Workspace = h.e.routes.pool.normalize(h.ws)
	if err := conv.NewStore(h.opts.StateDir).Save(rec); err != nil {
		t.Fatal(err)
	}
	in, err := inbox.Open(conv.InboxPath(h.opts.StateDir, t1Key), inbox.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Append(inbox.Entry{ID: m.ID, Platform: "fake", Channel: "C1", Thread: "T1", MessageID: m.Target.MessageID,
		UserID: "alice", Text: text, UUID: u}); err != nil {
		t.Fatal(err)
	}
	if err := in.MarkStarted(m.ID, ""); err != nil {
		t.Fatal(err)
	}
	in.Close()
}

// TestDurableRedeliveryAfterRestartRunsOnce: a platform that delivers the
// same event again after a restart (the ack was lost with the process)
// does not run it twice; a new message still runs.
func TestDurableRedeliveryAfterRestartRunsOnce(t *testing.T) {
	h, re := newRealHarness(t, nil, nil)
	m := h.message("alice", "T1", "only once")
	h.deliver(m)
	h.rec.waitSend(t, "echo: only once")
	h.waitIdle()
	h = h.restart()
	h.deliver(m) // the same platform id
	h.say("alice", "T1", "a new one")
	h.rec.waitSend(t, "echo: a new one")
	h.waitIdle()
	if got := fakeclaude.Texts(readRecord(t, re.record)); strings.Join(got, "|") != "only once|a new one" {
		t.Errorf("claude received %q, want each message once", got)
	}
	if got := h.rec.sends("echo: only once"); len(got) != 0 {
		t.Errorf("the redelivered message ran again: %q", got)
	}
}

// TestDurableQueuedSurviveShutdown: on shutdown the queued messages stay in
// the inbox, and the next start runs them, in order, once, without a new
// message to wake the session.
func TestDurableQueuedSurviveShutdown(t *testing.T) {
	// The grace is also how long the interrupted turn gets to end before
	// its process is closed: a busy machine can take longer than a few
	// milliseconds to answer the interrupt, and a turn closed without a
	// result stays in the journal (rightly, but not what is tested here).
	h, re := newRealHarness(t, nil, func(o *Options) { o.ShutdownGrace = 2 * time.Second })
	h.say("alice", "T1", "long [[HANG]]")
	pollFor(t, "the hanging turn to reach claude", func() bool { return len(readRecord(t, re.record)) == 1 })
	h.say("alice", "T1", "second")
	h.say("bob", "T1", "third")
	h.rec.waitSend(t, "Queued (position 2)")
	h.stop()
	if got := h.rec.sends(render.RestartQueuedText); len(got) != 2 {
		t.Errorf("stay-queued notices = %q, want two", got)
	}
	in, err := inbox.Open(conv.InboxPath(h.opts.StateDir, t1Key), inbox.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var pending []string
	for _, e := range in.Pending() {
		pending = append(pending, e.Text)
	}
	in.Close()
	if strings.Join(pending, "|") != "second|third" {
		t.Fatalf("inbox after shutdown = %q, want the two queued messages", pending)
	}

	h = h.restart()
	h.rec.waitSend(t, "echo: third")
	h.waitIdle()
	if got := fakeclaude.Texts(readRecord(t, re.record)); strings.Join(got, "|") != "long [[HANG]]|second|third" {
		t.Errorf("claude received %q, want each message once and in order", got)
	}
	if got := h.rec.sends("cc-connect restarted. Running the message that was waiting: “second”"); len(got) != 1 {
		t.Errorf("recovery notice = %q, want one", got)
	}
	if n := h.pending(t1Key); n != 0 {
		t.Errorf("inbox after the replay: %d pending, want none", n)
	}
}

// turnWithUUID runs one turn of text with uuid id straight on p, passing
// its events to on.
func turnWithUUID(ctx context.Context, p *agentproc.Process, id, text string, on func(agentproc.Event)) (*agentproc.Result, error) {
	t, err := p.StartTurn(ctx, agentproc.UserMessage{UUID: id, Text: text})
	if err != nil {
		return nil, err
	}
	return t.Wait(on)
}

// startedTurn runs one turn of text directly on the fake claude with a
// known uuid, in the harness's workspace and config dir, as a cc-connect
// that then died would have; it returns the session id.
func startedTurn(t *testing.T, h *harness, resumeID, id, text string) string {
	t.Helper()
	cfg := h.opts.Agent
	p, err := agentproc.Start(context.Background(), cfg, agentproc.StartOptions{Dir: h.e.routes.pool.normalize(h.ws), ResumeID: resumeID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	res, err := turnWithUUID(context.Background(), p, id, text, nil)
	if res == nil {
		// A crash: the session id is in the process's init.
		return p.SessionID()
	}
	_ = err
	return res.SessionID
}

// TestRecoveryDecision: after a crash the first pending message, started
// with uuid U, is sent, resumed with "Continue from where you left off." or
// reported lost, depending on the transcript; never both, never neither.
func TestRecoveryDecision(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(t *testing.T, h *harness, u string) (sessionID string)
		text   string
		notice string
		want   []string // what claude receives after the restart
		reply  string
	}{
		{"not in the transcript: sent", func(t *testing.T, h *harness, u string) string {
			return startedTurn(t, h, "", uuid.NewString(), "earlier")
		}, "the message", "may not have reached the agent; sending it now", []string{"the message"}, "echo: the message"},
		{"cut off mid-turn: continued", func(t *testing.T, h *harness, u string) string {
			return startedTurn(t, h, "", u, "cut [[CRASH]]")
		}, "cut [[CRASH]]", "was cut off; resuming it", []string{conv.ContinueText}, "echo: " + conv.ContinueText},
		{"finished, reply not posted: posted from the transcript", func(t *testing.T, h *harness, u string) string {
			return startedTurn(t, h, "", u, "done")
		}, "done", "had finished the turn for “done” before the restart; its reply follows", nil, "echo: done"},
		{"finished without reply text: lost", func(t *testing.T, h *harness, u string) string {
			return startedTurn(t, h, "", u, "paste [[TOOLONG]]")
		}, "paste [[TOOLONG]]", "its reply was not posted and is lost", nil, ""},
		{"no session yet: sent", func(t *testing.T, h *harness, u string) string {
			return ""
		}, "first words", "may not have reached the agent; sending it now", []string{"first words"}, "echo: first words"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, re := newRealHarness(t, nil, nil)
			h.stop()
			u := uuid.NewString()
			sid := tt.setup(t, h, u)
			before := len(readRecord(t, re.record))
			stageCutTurn(t, h, conv.Record{SessionID: sid}, u, tt.text)

			h = h.restart()
			h.rec.waitSend(t, tt.notice)
			if tt.reply != "" {
				h.rec.waitSend(t, tt.reply)
			}
			h.waitIdle()
			got := fakeclaude.Texts(readRecord(t, re.record)[before:])
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("claude received %q after the restart, want %q", got, tt.want)
			}
			if got := h.rec.sends("cc-connect restarted"); len(got) != 1 {
				t.Errorf("notices = %q, want one", got)
			}
			if n := h.pending(t1Key); n != 0 {
				t.Errorf("inbox after recovery: %d pending, want none", n)
			}
			if sid != "" && len(tt.want) == 0 {
				// Nothing runs on the session now: its lease is free.
				l, err := lease.Session(h.opts.StateDir, sid)
				if err != nil {
					t.Errorf("session lease after recovery without a process: %v", err)
				} else {
					l.Release()
				}
			}
			if sid != "" && len(tt.want) > 0 {
				if lines := readRecord(t, re.record)[before:]; lines[0].SessionID != sid {
					t.Errorf("recovered in session %s, want %s", lines[0].SessionID, sid)
				}
			}
		})
	}
}

// TestRecoveryWithoutTranscriptSaysOneThing: cc-connect and the CLI were
// stopped after the CLI confirmed its session id but before it wrote the
// transcript. The message is sent in a session started under that id, and
// the thread gets one notice that says so, not the restart notice followed
// by "Previous session could not be found".
func TestRecoveryWithoutTranscriptSaysOneThing(t *testing.T) {
	h, re := newRealHarness(t, nil, nil)
	h.stop()
	sid, u := uuid.NewString(), uuid.NewString()
	stageCutTurn(t, h, conv.Record{SessionID: sid}, u, "the message")

	h = h.restart()
	h.rec.waitSend(t, "echo: the message")
	h.waitIdle()
	var notices []string
	for _, c := range h.rec.kinds("send") {
		if !strings.HasPrefix(c.Text, "echo: ") {
			notices = append(notices, c.Text)
		}
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "cc-connect restarted") || !strings.Contains(notices[0], "in a new session") {
		t.Errorf("notices = %q, want one that says the message goes to a new session", notices)
	}
	lines := readRecord(t, re.record)
	if len(lines) != 1 || lines[0].Text != "the message" || lines[0].SessionID != sid {
		t.Errorf("claude received %+v, want the message once, in session %s", lines, sid)
	}
	if n := h.pending(t1Key); n != 0 {
		t.Errorf("inbox after recovery: %d pending, want none", n)
	}
}

// TestRecoveryTellsOfCancelledPermission: a permission request pending at
// the crash is reported cancelled, and the turn continues.
func TestRecoveryTellsOfCancelledPermission(t *testing.T) {
	h, re := newRealHarness(t, nil, nil)
	h.stop()
	u := uuid.NewString()
	sid := startedTurn(t, h, "", u, "tool [[TOOL:make build]] [[CRASH]]")
	stageCutTurn(t, h, conv.Record{SessionID: sid, PendingPermission: "Bash `make build`"}, u, "tool")
	before := len(readRecord(t, re.record))
	h = h.restart()
	note := h.rec.waitSend(t, "cc-connect restarted")
	if !strings.Contains(note.Text, "The permission request (Bash `make build`) was cancelled by the restart") ||
		!strings.Contains(note.Text, "resuming it") {
		t.Errorf("notice = %q", note.Text)
	}
	h.rec.waitSend(t, "echo: "+conv.ContinueText)
	h.waitIdle()
	if got := fakeclaude.Texts(readRecord(t, re.record)[before:]); strings.Join(got, "|") != conv.ContinueText {
		t.Errorf("claude received %q, want only the continuation", got)
	}
	rec, _, _ := conv.NewStore(h.opts.StateDir).Load(t1Key, time.Now())
	if rec.PendingPermission != "" {
		t.Errorf("pending permission still recorded: %q", rec.PendingPermission)
	}
}

// TestCorruptInboxFailsClosed: an unreadable journal refuses new input with
// a clear message, keeps the file as it is, and the conversation continues
// once an admin moved the file aside.
func TestCorruptInboxFailsClosed(t *testing.T) {
	h, re := newRealHarness(t, nil, nil)
	path := conv.InboxPath(h.opts.StateDir, t1Key)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	garbage := []byte("{\"op\":\"add\",\"entry\":{\"id\":\"x\"}}\nnot json at all\n")
	if err := os.WriteFile(path, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	h.say("alice", "T1", "hello")
	refusal := h.rec.waitSend(t, "could not be read, so new messages are refused")
	rel, err := filepath.Rel(h.e.opts.StateDir, path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(refusal.Text, "Admins: alice") || !strings.Contains(refusal.Text, rel) {
		t.Errorf("refusal = %q, want the file (%s) and the admins named", refusal.Text, rel)
	}
	if strings.Contains(refusal.Text, h.e.opts.StateDir) {
		t.Errorf("refusal %q shows a host path to everyone in the thread", refusal.Text)
	}
	h.say("alice", "T1", "still there?")
	h.rec.waitFor(t, "the second refusal", func([]recorded) bool {
		return len(h.rec.sends("could not be read, so new messages are refused")) >= 3 // on open, then per message
	})
	h.waitIdle()
	if got := readRecord(t, re.record); len(got) != 0 {
		t.Errorf("claude received %v from a failed-closed session", got)
	}
	if data, _ := os.ReadFile(path); string(data) != string(garbage) {
		t.Errorf("journal changed to %q; it must be kept for inspection", data)
	}
	if err := os.Rename(path, path+".inspect"); err != nil {
		t.Fatal(err)
	}
	h.say("alice", "T1", "after the fix")
	h.rec.waitSend(t, "echo: after the fix")
}

// TestInboxFullKeepsAccepted: past the limit the user is told and nothing
// accepted is dropped.
func TestInboxFullKeepsAccepted(t *testing.T) {
	h, re := newRealHarness(t, nil, func(o *Options) { o.QueueLimit = 1 })
	h.say("alice", "T1", "running [[SLOW:20]]")
	pollFor(t, "the turn to reach claude", func() bool { return len(readRecord(t, re.record)) == 1 })
	h.say("alice", "T1", "waiting")
	h.say("alice", "T1", "one too many")
	h.rec.waitSend(t, "this message was not")
	h.rec.waitSend(t, "echo: waiting")
	h.waitIdle()
	if got := fakeclaude.Texts(readRecord(t, re.record)); strings.Join(got, "|") != "running [[SLOW:20]]|waiting" {
		t.Errorf("claude received %q", got)
	}
}

// TestSessionLeaseExcludesSecondProcess: while a process of one
// conversation runs on a Claude session, nothing else may lock it; once it
// is closed the lease is free again.
func TestSessionLeaseExcludesSecondProcess(t *testing.T) {
	h, _ := newRealHarness(t, nil, nil)
	h.say("alice", "T1", "hello")
	h.rec.waitSend(t, "echo: hello")
	h.waitIdle()
	sid := h.e.convs.Lookup(t1Key).Record().SessionID
	if _, err := lease.Session(h.opts.StateDir, sid); err == nil {
		t.Fatal("the session lease was free while its process lives")
	}
	mark, err := os.ReadFile(procs.MarkPath(h.opts.StateDir, sid))
	if err != nil || !strings.Contains(string(mark), strconv.Itoa(h.e.convs.Lookup(t1Key).Process().Pid())) {
		t.Errorf("agent pid file = %q, %v", mark, err)
	}
	h.stop()
	l, err := lease.Session(h.opts.StateDir, sid)
	if err != nil {
		t.Fatalf("session lease after shutdown: %v", err)
	}
	l.Release()
}

func h0Log() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestRecoveryContinueFallsBackToMessage: when the cut session cannot be
// resumed (here: too long on resume), the fresh session gets the message
// itself, not "Continue from where you left off.".
func TestRecoveryContinueFallsBackToMessage(t *testing.T) {
	release := filepath.Join(t.TempDir(), "release")
	h, re := newRealHarness(t, map[string]string{"FAKECLAUDE_TOOLONG_ON_RESUME": "1", "FAKECLAUDE_RELEASE": release}, nil)
	h.stop()
	u := uuid.NewString()
	const text = "long job [[SLOW]]"
	p, err := agentproc.Start(context.Background(), h.opts.Agent, agentproc.StartOptions{Dir: h.e.routes.pool.normalize(h.ws)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The turn never ends by itself: cut it once the CLI has written the
	// message to its transcript, which is what makes recovery resume it
	// (a fixed wait lost that race on a loaded machine).
	ctx, cancel := context.WithCancel(context.Background())
	cut := make(chan struct{})
	go func() {
		defer close(cut)
		_, _ = turnWithUUID(ctx, p, u, text, nil)
	}()
	pollFor(t, "the message in the transcript", func() bool {
		path, _, err := h.e.tx.Find(p.SessionID())
		if err != nil {
			return false
		}
		b, _ := os.ReadFile(path)
		return bytes.Contains(b, []byte(u))
	})
	cancel()
	<-cut
	sid := p.SessionID()
	_ = p.Close(context.Background()) // SIGTERM after EOF: no result, as a crash
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	stageCutTurn(t, h, conv.Record{SessionID: sid}, u, text)
	before := len(readRecord(t, re.record))

	h = h.restart()
	h.rec.waitSend(t, "was cut off; resuming it")
	h.rec.waitSend(t, render.NoticeTooLong)
	h.waitIdle()
	got := readRecord(t, re.record)[before:]
	if len(got) != 2 || got[0].Text != conv.ContinueText || got[0].SessionID != sid || got[1].Text != text || got[1].SessionID == sid {
		t.Errorf("claude received %+v, want the continuation in %s, then the message in a fresh session", got, sid)
	}
}

// TestDurableNewKeepsItsPlaceAcrossRestart: a !new queued between turns is
// journaled with them, so after a restart the turn behind it still runs in
// the fresh session it asked for.
func TestDurableNewKeepsItsPlaceAcrossRestart(t *testing.T) {
	h, re := newRealHarness(t, nil, func(o *Options) { o.ShutdownGrace = 50 * time.Millisecond })
	h.say("alice", "T1", "long [[HANG]]")
	pollFor(t, "the hanging turn to reach claude", func() bool { return len(readRecord(t, re.record)) == 1 })
	h.say("alice", "T1", "!new")
	h.say("alice", "T1", "in the new one")
	h.rec.waitSend(t, "Queued (position 2)")
	h.stop()

	h = h.restart()
	h.rec.waitSend(t, "Started a new session")
	h.rec.waitSend(t, "echo: in the new one")
	h.waitIdle()
	lines := readRecord(t, re.record)
	if len(lines) != 2 || lines[1].Text != "in the new one" || lines[1].SessionID == lines[0].SessionID {
		t.Errorf("record = %+v, want the last message alone in a fresh session", lines)
	}
	if n := h.pending(t1Key); n != 0 {
		t.Errorf("inbox after the replay: %d pending, want none", n)
	}
}

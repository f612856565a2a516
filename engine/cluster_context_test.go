package engine

import (
	"context"
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/cluster"
	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
)

// startContextHost starts a cluster host whose agents are fake claude
// processes with a Claude config of its own, whose conversations'
// context is replicated through its node, and whose binding's workspace
// is ws (one path on every host, as on hosts that share a checkout's
// path). It returns the host and the fake claude's record and config
// dir.
func startContextHost(t *testing.T, name, url, ws string, clock *clustertest.Clock, stopAt ...func(string) bool) (*clusterHost, realEnv) {
	t.Helper()
	return startContextHostEnv(t, name, url, ws, clock, nil, stopAt...)
}

// startContextHostEnv is startContextHost with more of the fake claude's
// environment (its FAKECLAUDE_* gates).
func startContextHostEnv(t *testing.T, name, url, ws string, clock *clustertest.Clock, more map[string]string,
	stopAt ...func(string) bool) (*clusterHost, realEnv) {
	t.Helper()
	bin := fakeclaude.Build(t)
	home := t.TempDir()
	re := realEnv{record: filepath.Join(home, "record.jsonl"), configDir: filepath.Join(home, ".claude")}
	env := map[string]string{"HOME": home, "CLAUDE_CONFIG_DIR": re.configDir, "FAKECLAUDE_RECORD": re.record}
	maps.Copy(env, more)
	c := startClusterHostWithOn(t, name, url, clock, func(o *Options, c *harnessConfig) {
		c.real, c.contexts = true, true
		o.Agent = agentproc.Config{Command: bin, Env: env, CloseGrace: 2 * time.Second}
		o.Bindings[0].Workspace = ws
		if len(stopAt) > 0 {
			c.stopAt = stopAt[0]
		}
	})
	return c, re
}

// transcriptOf is the fake claude's transcript of session sid under the
// Claude config dir, "" when there is none.
func transcriptOf(t *testing.T, configDir, sid string) string {
	t.Helper()
	var out string
	err := filepath.WalkDir(configDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == sid+".jsonl" {
			b, rerr := os.ReadFile(p)
			if rerr != nil {
				return rerr
			}
			out = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestClusterThreadMovedBackResumesTheNewerContext: host a answers the
// first turn of a thread and dies; b takes the binding over and answers
// the second; a comes back and takes it back. a kept its own record of
// the conversation, which lacks the second turn: the turn it runs next
// resumes the session b replicated, which holds the second turn, and the
// thread is told it moved.
func TestClusterThreadMovedBackResumesTheNewerContext(t *testing.T) {
	srv := clustertest.Single(t)
	clock := clustertest.NewClock()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	a, ra := startContextHost(t, "a", srv.ClientURL(), ws, clock)
	b, rb := startContextHost(t, "b", srv.ClientURL(), ws, clock)
	const replicated = "Replicated the conversation's context"

	publish(t, a, "m-1", "T1", "turn one")
	if got := a.waitEchoes(t, 1); got[0] != "turn one" {
		t.Fatalf("a's replies = %q", got)
	}
	a.h.logs.WaitRecords(t, waitLimit, replicated, 1)

	// a dies; b takes the binding.
	a.kill()
	b.takeOver(t, a)
	publish(t, b, "m-2", "T1", "turn two")
	if got := b.waitEchoes(t, 1); got[0] != "turn two" {
		t.Fatalf("b's replies = %q", got)
	}
	b.h.logs.WaitRecords(t, waitLimit, replicated, 1)
	onB := readRecord(t, rb.record)
	if len(onB) != 1 || onB[0].SessionID == "" {
		t.Fatalf("b's fake claude got %+v; want the second turn", onB)
	}
	sid := onB[0].SessionID

	// a comes back, with its record of the conversation; b dies; a
	// takes the binding back.
	a2 := restartKilled(t, a)
	<-a2.h.e.convs.Ready()
	b.kill()
	a2.takeOver(t, b)
	a2.h.logs.WaitRecords(t, waitLimit, "Serving a cluster binding", 2) // the first tenure, then this one
	publish(t, a2, "m-3", "T1", "turn three")
	if got := a2.waitEchoes(t, 1); got[0] != "turn three" {
		t.Fatalf("a's replies = %q", got)
	}
	onA := readRecord(t, ra.record)
	if len(onA) != 2 || onA[1].Text != "turn three" {
		t.Fatalf("a's fake claude got %+v; want the first turn, then the third", onA)
	}
	if onA[1].SessionID != sid {
		t.Errorf("a ran the third turn in session %s (the first turn's: %s); want b's session %s", onA[1].SessionID, onA[0].SessionID, sid)
	}
	if tr := transcriptOf(t, ra.configDir, sid); !strings.Contains(tr, "turn two") || !strings.Contains(tr, "turn three") {
		t.Errorf("a's transcript of session %s does not hold the second turn, then the third:\n%s", sid, tr)
	}
	moved := a2.h.rec.sends("moved to host a")
	if len(moved) != 1 || !strings.Contains(moved[0], "It continues in the same Claude session, with the conversation's history.") {
		t.Errorf("a told the thread %d times it moved, want once, with its history:\n%s", len(moved), dump(a2.h.rec.snapshot()))
	}
}

// TestClusterThreadMovedBackToAWarmProcess: host a answers the first
// turn of a thread and keeps its claude process warm; a partition takes
// the binding's lease from it without a restart, and b answers the
// second turn. The partition heals, b dies and a takes the binding back:
// its conversation is still in memory, with the process that holds only
// the first turn. That process is closed, and the third turn runs in a
// new process resumed from the context b replicated: its user line in
// the transcript follows the second turn's reply, not the first's.
func TestClusterThreadMovedBackToAWarmProcess(t *testing.T) {
	srv := clustertest.Single(t)
	proxy := clustertest.NewProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"))
	clock := clustertest.NewClock()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	a, ra := startContextHost(t, "a", proxy.URL(), ws, clock)
	b, rb := startContextHost(t, "b", srv.ClientURL(), ws, clock)
	const replicated = "Replicated the conversation's context"

	publish(t, a, "w-1", "T1", "turn one")
	if got := a.waitEchoes(t, 1); got[0] != "turn one" {
		t.Fatalf("a's replies = %q", got)
	}
	a.h.logs.WaitRecords(t, waitLimit, replicated, 1)
	a.h.waitIdle()
	first := readRecord(t, ra.record)
	if len(first) != 1 {
		t.Fatalf("a's fake claude got %+v; want the first turn", first)
	}

	// a is cut off, and loses the lease without restarting: its
	// conversation and its idle process stay.
	proxy.Cut()
	b.takeOver(t, a)
	a.h.logs.WaitRecords(t, waitLimit, "Stopped serving a cluster binding; its running turns stop unanswered, for the next holder", 1)
	publish(t, b, "w-2", "T1", "turn two")
	if got := b.waitEchoes(t, 1); got[0] != "turn two" {
		t.Fatalf("b's replies = %q", got)
	}
	b.h.logs.WaitRecords(t, waitLimit, replicated, 1)
	onB := readRecord(t, rb.record)
	if len(onB) != 1 || onB[0].SessionID == "" {
		t.Fatalf("b's fake claude got %+v; want the second turn", onB)
	}
	sid := onB[0].SessionID

	// The partition heals; b dies; a takes the binding back.
	proxy.Heal()
	b.kill()
	a.takeOver(t, b)
	a.h.logs.WaitRecords(t, waitLimit, "Serving a cluster binding", 2) // the first tenure, then this one
	publish(t, a, "w-3", "T1", "turn three")
	if got := a.waitEchoes(t, 2); got[1] != "turn three" {
		t.Fatalf("a's replies = %q", got)
	}
	a.h.waitIdle()
	if n := len(a.h.logs.Records("Closing the agent process: another host answered the conversation since, and its context was restored")); n != 1 {
		t.Errorf("a closed its warm process %d times for the restored context, want once", n)
	}
	onA := readRecord(t, ra.record)
	if len(onA) != 2 || onA[1].Text != "turn three" {
		t.Fatalf("a's fake claude got %+v; want the first turn, then the third", onA)
	}
	if onA[1].Pid == onA[0].Pid {
		t.Errorf("a ran the third turn in its warm process %d, which holds only the first turn", onA[0].Pid)
	}
	if onA[1].SessionID != sid {
		t.Errorf("a ran the third turn in session %s; want b's session %s", onA[1].SessionID, sid)
	}
	// The third turn's prompt follows the second turn's reply in the
	// transcript: the process that ran it had the second turn in its
	// context.
	lines := transcriptLines(t, transcriptOf(t, ra.configDir, sid))
	two, three := -1, -1
	for i, l := range lines {
		switch {
		case l.Type == "user" && strings.Contains(string(l.Content), "turn two"):
			two = i
		case l.Type == "user" && strings.Contains(string(l.Content), "turn three"):
			three = i
		}
	}
	if two < 0 || three < two {
		t.Fatalf("a's transcript of session %s does not hold the second turn, then the third (at %d, %d)", sid, two, three)
	}
	prev := ""
	for _, l := range lines[:three] {
		if l.UUID != "" && l.Type != "last-prompt" {
			prev = l.UUID
		}
	}
	if lines[three].Parent != prev {
		t.Errorf("the third turn's prompt follows %q in the transcript, want the line before it, %q (the second turn's reply): "+
			"the process that ran it did not have the second turn in its context", lines[three].Parent, prev)
	}
	moved := a.h.rec.sends("moved to host a")
	if len(moved) != 1 || !strings.Contains(moved[0], "It continues in the same Claude session, with the conversation's history.") {
		t.Errorf("a told the thread %d times it moved, want once, with its history:\n%s", len(moved), dump(a.h.rec.snapshot()))
	}
}

// TestClusterThreadMovedBackOverATurnOfTheOlderProcess: as in
// TestClusterThreadMovedBackToAWarmProcess, host a keeps its process warm
// (here with a background task running), loses the binding to b, which
// answers the second turn, and takes it back. While the binding is away,
// the background task ends on a and its process starts a turn of its own,
// held before it writes: it is running when a decides to take b's newer
// context, and writes its answer to the session's transcript after that.
// That turn is the older context's: the newer transcript is placed only
// once it ended and its process exited, so the third turn resumes b's
// context whole, in a new process, with no line of the older process
// after it. When the transcript cannot be written then (a link where it
// goes), the thread, told it continues with its history, is told it goes
// on in this host's own session.
func TestClusterThreadMovedBackOverATurnOfTheOlderProcess(t *testing.T) {
	for _, tc := range []struct {
		name string
		link bool // a's transcript is a link when the newer one is placed: refused
	}{
		{name: "placed"},
		{name: "not written", link: true},
	} {
		t.Run(tc.name, func(t *testing.T) { movedBackOverATurnOfTheOlderProcess(t, tc.link) })
	}
}

func movedBackOverATurnOfTheOlderProcess(t *testing.T, link bool) {
	srv := clustertest.Single(t)
	proxy := clustertest.NewProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"))
	clock := clustertest.NewClock()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	gates := t.TempDir()
	bgGate, ownGate := filepath.Join(gates, "bg"), filepath.Join(gates, "own")
	a, ra := startContextHostEnv(t, "a", proxy.URL(), ws, clock, map[string]string{"FAKECLAUDE_OWN_GATE": ownGate})
	b, rb := startContextHost(t, "b", srv.ClientURL(), ws, clock)
	const replicated = "Replicated the conversation's context"
	const key = "fake/C1/T1"

	publish(t, a, "o-1", "T1", "[[BG:"+bgGate+"]] turn one")
	a.h.rec.waitFor(t, "a's reply to the first turn", func([]recorded) bool { return len(a.h.rec.sends("tool said: ")) == 1 })
	a.h.logs.WaitRecords(t, waitLimit, replicated, 1)
	a.h.waitIdle()
	first := readRecord(t, ra.record)
	if len(first) != 1 {
		t.Fatalf("a's fake claude got %+v; want the first turn", first)
	}

	proxy.Cut()
	b.takeOver(t, a)
	a.h.logs.WaitRecords(t, waitLimit, "Stopped serving a cluster binding; its running turns stop unanswered, for the next holder", 1)
	publish(t, b, "o-2", "T1", "turn two")
	if got := b.waitEchoes(t, 1); got[0] != "turn two" {
		t.Fatalf("b's replies = %q", got)
	}
	b.h.logs.WaitRecords(t, waitLimit, replicated, 1)
	onB := readRecord(t, rb.record)
	if len(onB) != 1 || onB[0].SessionID == "" {
		t.Fatalf("b's fake claude got %+v; want the second turn", onB)
	}
	sid := onB[0].SessionID
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	head, newer, err := b.node.GetContext(ctx, fakeAll, names.Conversation("C1", "T1"))
	if err != nil || head.SessionID != sid || head.Host != "b" || !strings.Contains(string(newer), "turn two") {
		t.Fatalf("the replicated context is %+v (%d bytes), %v; want b's, of session %s, with the second turn", head, len(newer), err, sid)
	}

	// The background task ends on a: its process starts a turn of its
	// own, which a's conversation runs, and holds it before its answer.
	if err := os.WriteFile(bgGate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	pollFor(t, "a's own turn held at its gate", func() bool { _, err := os.Stat(ownGate + ".held"); return err == nil })
	// The conversation's state has no event to wait on.
	pollFor(t, "a's conversation running the CLI's own turn", func() bool {
		s := a.h.e.convs.Lookup(key)
		return s != nil && s.State() == "running"
	})

	// The partition heals; b dies; a takes the binding back and decides
	// on b's context while the older process's turn runs.
	proxy.Heal()
	b.kill()
	a.takeOver(t, b)
	a.h.logs.WaitRecords(t, waitLimit, "Serving a cluster binding", 2) // the first tenure, then this one
	publish(t, a, "o-3", "T1", "turn three")
	// Journaled, and the thread's notice that it moved queued.
	a.accepted.wait(t, "o-3")
	if link {
		// Where the newer transcript goes, a link to a copy of a's own:
		// the older process appends through it, and placing is refused.
		path := transcriptPath(t, ra.configDir, sid)
		own, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		elsewhere := filepath.Join(t.TempDir(), "own.jsonl")
		if err := os.WriteFile(elsewhere, own, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(elsewhere, path); err != nil {
			t.Fatal(err)
		}
	}
	// Only now does the older process write its turn's answer.
	if err := os.WriteFile(ownGate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := a.waitEchoes(t, 1); got[0] != "turn three" {
		t.Fatalf("a's replies = %q", got)
	}
	a.h.waitIdle()

	onA := readRecord(t, ra.record)
	if len(onA) != 2 || onA[1].Text != "turn three" {
		t.Fatalf("a's fake claude got %+v; want the first turn, then the third", onA)
	}
	if onA[1].Pid == onA[0].Pid {
		t.Errorf("a ran the third turn in its older process %d", onA[0].Pid)
	}
	if onA[1].SessionID != sid {
		t.Errorf("a ran the third turn in session %s; want b's session %s", onA[1].SessionID, sid)
	}
	if n := len(a.h.rec.sends("background task: ")); n != 1 {
		t.Errorf("a posted the older process's own turn %d times, want once:\n%s", n, dump(a.h.rec.snapshot()))
	}
	if link {
		// The notice that it moved with its history, then what became of it.
		var order []string
		for _, r := range a.h.rec.snapshot() {
			switch {
			case r.Kind != "send":
			case strings.Contains(r.Text, "moved to host a"):
				order = append(order, "moved")
			case strings.Contains(r.Text, "history from host b could not be used here, because its history could not be written on this host: "+
				"it continues in this host's own Claude session, which does not hold what was said on host b."):
				order = append(order, "not used")
			}
		}
		if strings.Join(order, "|") != "moved|not used" {
			t.Errorf("a told the thread %q; want that it moved, then that b's history could not be used:\n%s", order, dump(a.h.rec.snapshot()))
		}
		return
	}
	// The transcript the third turn resumed: b's context whole, then the
	// third turn, and nothing the older process wrote.
	tr := transcriptOf(t, ra.configDir, sid)
	if !strings.HasPrefix(tr, string(newer)) {
		t.Fatalf("a's transcript of session %s does not begin with the context b replicated:\n%s", sid, tr)
	}
	after := transcriptLines(t, tr[len(newer):])
	if len(after) == 0 || after[0].Type != "user" || !strings.Contains(string(after[0].Content), "turn three") {
		got := "nothing"
		if len(after) > 0 {
			got = after[0].Type + " " + string(after[0].Content)
		}
		t.Errorf("the line after b's context in a's transcript is %s; want the third turn's prompt", got)
	}
	if strings.Contains(tr, "background task: ") {
		t.Errorf("the older process's own turn wrote into the transcript the third turn resumed:\n%s", tr)
	}
	moved := a.h.rec.sends("moved to host a")
	if len(moved) != 1 || !strings.Contains(moved[0], "It continues in the same Claude session, with the conversation's history.") {
		t.Errorf("a told the thread %d times it moved, want once, with its history:\n%s", len(moved), dump(a.h.rec.snapshot()))
	}
}

// transcriptPath is where the fake claude keeps session sid's transcript
// under the Claude config dir.
func transcriptPath(t *testing.T, configDir, sid string) string {
	t.Helper()
	var out string
	err := filepath.WalkDir(configDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == sid+".jsonl" {
			out = p
		}
		return nil
	})
	if err != nil || out == "" {
		t.Fatalf("no transcript of session %s under %s: %v", sid, configDir, err)
	}
	return out
}

// transcriptLine is what a test reads of a fake claude's transcript line.
type transcriptLine struct {
	Type    string          `json:"type"`
	UUID    string          `json:"uuid"`
	Parent  string          `json:"parentUuid"`
	Content json.RawMessage `json:"message"`
}

// transcriptLines decodes a transcript, one line each.
func transcriptLines(t *testing.T, tr string) []transcriptLine {
	t.Helper()
	var out []transcriptLine
	for _, s := range strings.Split(tr, "\n") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		var l transcriptLine
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("transcript line %q: %v", s, err)
		}
		out = append(out, l)
	}
	return out
}

// TestClusterPostPendingKnownConversation: host a answers the first turn
// of a thread; a partition takes the binding's lease from it, and b
// answers the second turn, then settles the third and dies before it
// posts its reply (stored in the cluster). The partition heals and a
// takes the binding back: a knows the conversation (it is in memory,
// its process warm). a posts the stored reply, once, before it answers
// the conversation's next message; the thread is told where the
// conversation moved before anything a posts of it; and the next turn
// runs on the context b replicated, not on a's own older one.
func TestClusterPostPendingKnownConversation(t *testing.T) {
	srv := clustertest.Single(t)
	proxy := clustertest.NewProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"))
	clock := clustertest.NewClock()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	// b's second settlement (the third turn's) is its last act.
	var settled atomic.Int32
	var killed atomic.Bool
	stopB := func(p string) bool {
		if p == conv.PointSettled && settled.Add(1) == 2 {
			killed.Store(true)
		}
		return killed.Load() && (p == conv.PointSettled || p == conv.PointReplied)
	}
	a, ra := startContextHost(t, "a", proxy.URL(), ws, clock)
	b, rb := startContextHost(t, "b", srv.ClientURL(), ws, clock, stopB)
	const replicated = "Replicated the conversation's context"

	publish(t, a, "p-1", "T1", "turn one")
	if got := a.waitEchoes(t, 1); got[0] != "turn one" {
		t.Fatalf("a's replies = %q", got)
	}
	a.h.logs.WaitRecords(t, waitLimit, replicated, 1)
	a.h.waitIdle()

	proxy.Cut()
	b.takeOver(t, a)
	a.h.logs.WaitRecords(t, waitLimit, "Stopped serving a cluster binding; its running turns stop unanswered, for the next holder", 1)
	publish(t, b, "p-2", "T1", "turn two")
	if got := b.waitEchoes(t, 1); got[0] != "turn two" {
		t.Fatalf("b's replies = %q", got)
	}
	b.h.logs.WaitRecords(t, waitLimit, replicated, 1)
	publish(t, b, "p-3", "T1", "turn three")
	pollFor(t, "b's third turn settled, its reply not posted", func() bool { return killed.Load() && b.h.e.convs.Outstanding() == 0 })
	if got := b.echoes(); len(got) != 1 {
		t.Fatalf("b posted %q; want only the second turn's reply", got)
	}
	sid := readRecord(t, rb.record)[0].SessionID

	proxy.Heal()
	b.kill()
	a.takeOver(t, b)
	a.h.logs.WaitRecords(t, waitLimit, "Serving a cluster binding", 2) // the first tenure, then this one
	if got := a.waitEchoes(t, 2); got[1] != "turn three" {
		t.Fatalf("a's replies = %q; want the stored reply of the third turn", got)
	}
	publish(t, a, "p-4", "T1", "turn four")
	if got := a.waitEchoes(t, 3); strings.Join(got, "|") != "turn one|turn three|turn four" {
		t.Fatalf("a's replies = %q; want the first, the stored third, then the fourth, once each", got)
	}
	a.h.waitIdle()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if r, err := cluster.RepliesOf(a.node).Replies(ctx, fakeAll); err != nil || len(r) != 0 {
		t.Fatalf("replies still stored after they were posted: %d, %v", len(r), err)
	}
	// The notice first, then what a posts of the moved conversation.
	var order []string
	for _, r := range a.h.rec.snapshot() {
		switch {
		case r.Kind != "send":
		case strings.Contains(r.Text, "moved to host a"):
			order = append(order, "moved")
			if !strings.Contains(r.Text, "It continues in the same Claude session, with the conversation's history.") {
				t.Errorf("moved notice %q; want it to continue with its history", r.Text)
			}
		case strings.HasPrefix(r.Text, "echo: "):
			order = append(order, strings.TrimPrefix(strings.SplitN(r.Text, "\n", 2)[0], "echo: "))
		}
	}
	if strings.Join(order, "|") != "turn one|moved|turn three|turn four" {
		t.Errorf("a posted %q; want the moved notice once, before the stored reply:\n%s", order, dump(a.h.rec.snapshot()))
	}
	onA := readRecord(t, ra.record)
	if len(onA) != 2 || onA[1].Text != "turn four" || onA[1].SessionID != sid || onA[1].Pid == onA[0].Pid {
		t.Fatalf("a's fake claude got %+v; want the first turn, then the fourth in a new process of b's session %s", onA, sid)
	}
	// The fourth turn's context holds the second turn and the third,
	// whose reply the thread got from a: b replicated it when it settled
	// it, before the reply it never posted.
	tr := transcriptOf(t, ra.configDir, sid)
	at := func(s string) int { return strings.Index(tr, `"content":"`+s+`"`) }
	if !(at("turn two") >= 0 && at("turn two") < at("turn three") && at("turn three") < at("turn four")) {
		t.Errorf("a's transcript of session %s does not hold the second turn, the third, then the fourth:\n%s", sid, tr)
	}
}

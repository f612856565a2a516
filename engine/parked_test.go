package engine

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/platform"
)

// TestApprovalOutlivesRestart: a permission request pending when
// cc-connect restarts stays open. Its prompt is not closed, the old prompt's
// button answers it after the restart, and the turn resumes in its session
// with a continuation that tells Claude the answer; nobody is asked again.
func TestApprovalOutlivesRestart(t *testing.T) {
	tests := []struct {
		name   string
		choice platform.Choice
		told   string // in the continuation Claude receives
		shown  string // on the prompt
	}{
		{"allowed", platform.ChoiceAllow, "Bash `make build` was allowed once: make the same call again to run it (tool Bash, input {", "allowed once by alice"},
		{"denied", platform.ChoiceDeny, "Bash `make build` was denied: Denied by alice in chat.", "denied by alice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, re := newRealHarness(t, nil, nil)
			h.say("alice", "T1", "please [[TOOL:make build]]")
			ask := waitAsk(t, h)
			old := h
			h = h.restart()
			if got := old.rec.sends(render.ParkedAtShutdown); len(got) != 1 {
				t.Errorf("notice at shutdown = %q, want %q once", got, render.ParkedAtShutdown)
			}
			if res := old.rec.kinds("resolve"); len(res) != 0 {
				t.Errorf("the prompt was closed at shutdown: %+v", res)
			}
			h.rec.waitSend(t, "still waits for an answer")
			if st := h.e.convs.Lookup(t1Key); st == nil || st.State() != "requires_action" {
				t.Errorf("conversation after the restart is not waiting on the answer")
			}
			before := len(readRecord(t, re.record))
			h.press("alice", ask.Prompt.RequestID, tt.choice)
			h.rec.waitSend(t, "echo: "+conv.ContinueText)
			h.waitIdle()
			if res := h.rec.kinds("resolve"); len(res) != 1 || res[0].Text != tt.shown {
				t.Errorf("resolved = %+v, want %q on the prompt", res, tt.shown)
			}
			if got := h.rec.sends("with the answer"); len(got) != 1 {
				t.Errorf("resume notices = %q, want one", got)
			}
			got := fakeclaude.Texts(readRecord(t, re.record)[before:])
			if len(got) != 1 || !strings.HasPrefix(got[0], conv.ContinueText) || !strings.Contains(got[0], tt.told) {
				t.Errorf("claude received %q, want the continuation telling %q", got, tt.told)
			}
			if n := len(h.rec.kinds("ask")); n != 0 {
				t.Errorf("%d prompts posted after the restart, want none (nobody is asked again)", n)
			}
			if n := h.pending(t1Key); n != 0 {
				t.Errorf("inbox: %d pending, want none", n)
			}
			rec, _, _ := conv.NewStore(h.opts.StateDir).Load(t1Key, time.Now())
			if rec.Parked != "" || rec.PendingPermission != "" {
				t.Errorf("record still holds the request: %q %q", rec.Parked, rec.PendingPermission)
			}
		})
	}
}

// parkedJSON is a record's form of one request waiting on a prompt, as a
// kill -9 leaves it (engine/conv/parked.go).
func parkedJSON(t *testing.T, item, requestID, command string, asked time.Time) string {
	t.Helper()
	input, _ := json.Marshal(map[string]string{"command": command})
	b, err := json.Marshal([]map[string]any{{
		"item": item, "asked": asked,
		"req":    map[string]any{"RequestID": requestID, "ToolName": "Bash", "Input": json.RawMessage(input)},
		"prompt": platform.Target{Platform: "fake", Channel: "C1", Thread: "T1", MessageID: "prompt-1"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestApprovalOutlivesKill: a kill -9 while a request waits leaves it in
// the record; the next start waits on it rather than cancelling it, the
// old prompt's button answers it, and past permission_timeout (counted
// from the first asking) the documented default applies: denied, and the
// thread is told.
func TestApprovalOutlivesKill(t *testing.T) {
	t.Run("answered", func(t *testing.T) {
		h, re := newRealHarness(t, nil, nil)
		h.stop()
		u := uuid.NewString()
		sid := startedTurn(t, h, "", u, "tool [[TOOL:make build]] [[CRASH]]")
		m := h.message("alice", "T1", "tool")
		stageCutTurnAs(t, h, m, conv.Record{SessionID: sid, PendingPermission: "Bash `make build`",
			Parked: parkedJSON(t, m.ID, "req-1", "make build", time.Now())}, u)
		before := len(readRecord(t, re.record))
		h = h.restart()
		h.rec.waitSend(t, "still waits for an answer")
		if got := h.rec.sends("was cancelled"); len(got) != 0 {
			t.Errorf("notices %q: the request was cancelled", got)
		}
		h.press("alice", "req-1", platform.ChoiceAllow)
		h.rec.waitSend(t, "echo: "+conv.ContinueText)
		h.waitIdle()
		got := fakeclaude.Texts(readRecord(t, re.record)[before:])
		if len(got) != 1 || !strings.Contains(got[0], "Bash `make build` was allowed once") {
			t.Errorf("claude received %q, want the continuation with the answer", got)
		}
	})
	t.Run("timed out", func(t *testing.T) {
		h, re := newRealHarness(t, nil, func(o *Options) { o.PermissionTimeout = time.Minute })
		h.stop()
		u := uuid.NewString()
		sid := startedTurn(t, h, "", u, "tool [[TOOL:make build]] [[CRASH]]")
		m := h.message("alice", "T1", "tool")
		stageCutTurnAs(t, h, m, conv.Record{SessionID: sid, PendingPermission: "Bash `make build`",
			Parked: parkedJSON(t, m.ID, "req-1", "make build", time.Now().Add(-2*time.Minute))}, u)
		before := len(readRecord(t, re.record))
		h = h.restart()
		h.rec.waitSend(t, "echo: "+conv.ContinueText)
		h.waitIdle()
		if got := h.rec.sends("denied: no answer within 1m0s"); len(got) != 1 {
			t.Errorf("timeout notices = %q, want one", got)
		}
		got := fakeclaude.Texts(readRecord(t, re.record)[before:])
		if len(got) != 1 || !strings.Contains(got[0], "was denied: No answer in chat within 1m0s") {
			t.Errorf("claude received %q, want the continuation with the timeout's denial", got)
		}
	})
}

// TestApprovalReminder: a request that waited approval_reminder mentions
// the approvers once (here the platform has no mentions: the text is
// posted), and not again.
func TestApprovalReminder(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *harnessConfig) {
		o.ApprovalReminder = 50 * time.Millisecond
		o.PermissionTimeout = time.Hour
	})
	h.say("alice", "T1", "please [[TOOL:make build]]")
	ask := waitAsk(t, h)
	h.rec.waitSend(t, "has waited 50ms for an answer")
	h.press("alice", ask.Prompt.RequestID, platform.ChoiceAllow)
	h.rec.waitSend(t, "ran: make build")
	h.waitIdle()
	if got := h.rec.sends("has waited"); len(got) != 1 {
		t.Errorf("reminders = %q, want exactly one", got)
	}
}

// TestApprovalReminderMentionsPeopleOnly: with no approvers configured the
// prompt and its reminder mention the person who asked; a run (a schedule,
// a webhook) stands for nobody, so nobody is mentioned and the reminder is
// posted as text.
func TestApprovalReminderMentionsPeopleOnly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		start    func(h *harness)
		mentions int    // of mention, each of alice
		kind     string // how the reminder is posted
	}{
		{"chat user", func(h *harness) { h.say("alice", "T1", "please [[TOOL:make build]]") }, 2, "mention"},
		{"schedule", func(h *harness) {
			if err := h.submit(testRun("schedule:nightly@2026-03-10T01:30Z", "please [[TOOL:make build]]")); err != nil {
				t.Fatalf("Submit: %v", err)
			}
		}, 0, "send"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, tp := newTeamHarness(t, func(o *Options) {
				o.ApprovalReminder = 50 * time.Millisecond
				o.PermissionTimeout = time.Hour
			})
			tc.start(h)
			ask := waitAsk(t, h)
			h.rec.waitFor(t, "the reminder", func(calls []recorded) bool {
				return slices.ContainsFunc(calls, func(c recorded) bool { return strings.Contains(c.Text, "has waited 50ms") })
			})
			for _, c := range h.rec.snapshot() {
				if strings.Contains(c.Text, "has waited 50ms") && c.Kind != tc.kind {
					t.Errorf("reminder posted as %s, want %s", c.Kind, tc.kind)
				}
			}
			tp.mu.Lock()
			got := slices.Clone(tp.mentions)
			tp.mu.Unlock()
			if len(got) != tc.mentions {
				t.Errorf("mentions %v, want %d", got, tc.mentions)
			}
			for _, ms := range got {
				if len(ms) != 1 || ms[0].UserID != "alice" {
					t.Errorf("mentioned %v, want alice only", ms)
				}
			}
			if err := h.e.HandleAction(context.Background(), platform.Action{Target: ask.To, UserID: "alice", UserName: "alice",
				RequestID: ask.Prompt.RequestID, Choice: platform.ChoiceAllow}); err != nil {
				t.Fatalf("HandleAction: %v", err)
			}
			h.rec.waitSend(t, "ran: make build")
			h.waitIdle()
		})
	}
}

// TestLongRunMentionsNobody: a turn that ran past notify_after mentions the
// person who asked; a scheduled run's turn has nobody to tell.
func TestLongRunMentionsNobody(t *testing.T) {
	t.Parallel()
	h, tp := newTeamHarness(t, func(o *Options) {
		o.Team.NotifyAfter = 0
		o.Bindings[0].Approvers = []string{"bob"} // a run's prompts would mention bob
	})
	if err := h.submit(testRun("schedule:nightly@2026-03-10T01:30Z", "triage")); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	h.rec.waitSend(t, "\ntriage\n")
	h.waitIdle()
	h.say("alice", "T1", "hello")
	h.rec.waitFor(t, "alice told her turn is done", func(calls []recorded) bool {
		return slices.ContainsFunc(calls, func(c recorded) bool { return c.Kind == "mention" && strings.Contains(c.Text, "is done") })
	})
	h.waitIdle()
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if len(tp.mentions) != 1 || tp.mentions[0][0].UserID != "alice" {
		t.Errorf("mentions %v, want alice's only", tp.mentions)
	}
}

// heldNotice holds the conversation inside its post of a text holding
// sub (until release is closed), after saying so on posting: what the
// conversation did before that post is all there is while it is held.
type heldNotice struct {
	richPlatform
	sub     string
	posting chan struct{}
	release chan struct{}
	once    sync.Once
}

func (p *heldNotice) Send(ctx context.Context, to platform.Target, text string) (platform.Target, error) {
	if strings.Contains(text, p.sub) {
		p.once.Do(func() {
			close(p.posting)
			<-p.release
		})
	}
	return p.richPlatform.Send(ctx, to, text)
}

// TestApprovalPressedAsRestartNoticePosts: the notice that a request still
// waits after a restart is posted once the request is registered: the old
// prompt's button, pressed while that notice is being posted, answers it
// (it used to find "no longer pending" and the turn waited for good).
func TestApprovalPressedAsRestartNoticePosts(t *testing.T) {
	h, _ := newRealHarness(t, nil, nil)
	h.say("alice", "T1", "please [[TOOL:make build]]")
	ask := waitAsk(t, h)
	held := &heldNotice{sub: "still waits for an answer", posting: make(chan struct{}), release: make(chan struct{})}
	h.cfg.adapter = func(rec *fakePlatform) platform.Adapter {
		held.richPlatform = richPlatform{rec}
		return held
	}
	h = h.restart()
	select {
	case <-held.posting:
	case <-time.After(waitLimit):
		close(held.release)
		t.Fatal("timed out waiting for the restart's notice")
	}
	h.press("alice", ask.Prompt.RequestID, platform.ChoiceAllow)
	close(held.release)
	calls := h.rec.waitFor(t, "the turn going on, or the press refused", func(calls []recorded) bool {
		for _, c := range calls {
			if c.Kind == "send" && (strings.Contains(c.Text, "echo: "+conv.ContinueText) || c.Text == render.PermissionGone) {
				return true
			}
		}
		return false
	})
	if got := h.rec.sends(render.PermissionGone); len(got) != 0 {
		t.Fatalf("the press as the notice was posted was refused: %q\n%s", got, dump(calls))
	}
	h.waitIdle()
	if n := h.pending(t1Key); n != 0 {
		t.Errorf("inbox: %d pending, want none", n)
	}
}

package engine

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/platform"
)

// activityLog keeps the events a conversation publishes.
type activityLog struct {
	mu     sync.Mutex
	events []activity.Event
}

func (l *activityLog) Record(e activity.Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *activityLog) kinds() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		if e.Kind != activity.Text {
			out = append(out, string(e.Kind))
		}
	}
	return out
}

func TestConsoleCommand(t *testing.T) {
	t.Run("off", func(t *testing.T) {
		h := newHarness(t, nil)
		h.say("alice", "T1", "!console")
		h.rec.waitSend(t, render.ConsoleOff)
	})
	var issued []string
	h := newHarness(t, func(o *Options, _ *harnessConfig) {
		o.ConsoleLinks = func(plat, user, name string) (string, error) {
			issued = append(issued, plat+" "+user)
			return "https://cc.example/signin?t=tok-" + user, nil
		}
	})
	// The fake platform cannot write to a person privately: in a channel
	// no link is issued, so none is shown where others could read it.
	h.say("alice", "T1", "!console")
	h.rec.waitSend(t, render.ConsoleNeedsDM)
	m := h.message("bob", "", "!console")
	m.IsDM = true
	h.deliver(m)
	h.rec.waitSend(t, "https://cc.example/signin?t=tok-bob")
	if strings.Join(issued, ",") != "fake bob" {
		t.Errorf("links issued for %q, want only bob's, asked in a DM", issued)
	}
}

func TestConsoleViewRightsAndEvents(t *testing.T) {
	log := &activityLog{}
	h := newHarness(t, func(o *Options, _ *harnessConfig) {
		o.Bindings[0].Approvers = []string{"alice"}
		o.Activity = log
	})
	v := h.e.Console()
	h.say("alice", "T1", "[[TOOL:touch x]]")
	ask := waitAsk(t, h)
	key := "fake/C1/T1"
	if c, ok := v.Conversation(key, "bob"); !ok || c.Rights.Approve || !c.Rights.Use {
		t.Errorf("bob's view = %+v, %v: want him to see it and not approve", c.Rights, ok)
	}
	if _, ok := v.Conversation(key, "mallory"); ok {
		t.Error("a user the binding does not allow sees the conversation")
	}
	// Bob's answer goes the buttons' way, and the gate refuses it there.
	if err := v.Answer(context.Background(), key, "bob", "bob", ConsoleAnswer{RequestID: ask.Prompt.RequestID, Choice: platform.ChoiceAllow}); err != nil {
		t.Fatal(err)
	}
	h.rec.waitSend(t, "bob is not allowed to answer permission requests")
	if err := v.Answer(context.Background(), key, "alice", "alice", ConsoleAnswer{RequestID: ask.Prompt.RequestID, Choice: platform.ChoiceAllow}); err != nil {
		t.Fatal(err)
	}
	h.waitIdle()
	want := "asked,started,tool,asking,answered,finished"
	if got := strings.Join(log.kinds(), ","); got != want {
		t.Errorf("activity = %s, want %s", got, want)
	}
	// The console answers a request by its id: both ends carry it.
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, e := range log.events {
		if (e.Kind == activity.Asking || e.Kind == activity.Answered) && e.Request != ask.Prompt.RequestID {
			t.Errorf("%s names request %q, want %q", e.Kind, e.Request, ask.Prompt.RequestID)
		}
	}
}

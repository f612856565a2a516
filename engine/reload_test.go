package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/platform"
)

// reloadHarness is a harness whose only binding is fake/C1 in its own
// workspace, allowing alice (an admin) only.
func reloadHarness(t *testing.T) *harness {
	t.Helper()
	return newHarness(t, func(o *Options, _ *harnessConfig) {
		o.Bindings[0].Channel = "C1"
		o.Bindings[0].AllowUsers = []string{"alice"}
	})
}

// inChannel is a message like h.message, posted in another channel.
func (h *harness) inChannel(channel, user, thread, text string) platform.Message {
	m := h.message(user, thread, text)
	m.Target.Channel = channel
	return m
}

// reload applies bindings (and adapters) and fails the test on error.
func (h *harness) reload(r Reload) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.e.Reload(ctx, r); err != nil {
		h.t.Fatalf("Reload: %v", err)
	}
}

// bindingsWith returns the harness's bindings changed by f.
func (h *harness) bindingsWith(f func(bs []binding.Binding) []binding.Binding) []binding.Binding {
	bs := make([]binding.Binding, len(h.opts.Bindings))
	for i, b := range h.opts.Bindings {
		b.AllowUsers = slices.Clone(b.AllowUsers)
		b.Admins = slices.Clone(b.Admins)
		bs[i] = b
	}
	return f(bs)
}

func TestReloadNewBindingRoutesAtOnce(t *testing.T) {
	h := reloadHarness(t)
	h.deliver(h.inChannel("C2", "alice", "T1", "before"))
	h.waitIdle()
	if got := h.rec.snapshot(); len(got) != 0 {
		t.Fatalf("an unbound channel was answered: %s", dump(got))
	}
	h.reload(Reload{Bindings: h.bindingsWith(func(bs []binding.Binding) []binding.Binding {
		return append(bs, binding.Binding{Platform: "fake", Channel: "C2", Workspace: t.TempDir(), AllowUsers: []string{"alice"},
			RequireMention: bs[0].RequireMention, Setup: bs[0].Setup})
	})})
	h.deliver(h.inChannel("C2", "alice", "T1", "after"))
	h.rec.waitSend(t, "echo: after")
	if n := len(h.rec.sends("before")); n != 0 {
		t.Errorf("the message sent before the binding existed was answered")
	}
}

func TestReloadAllowListAppliesToNextMessage(t *testing.T) {
	h := reloadHarness(t)
	h.say("alice", "T1", "warm")
	h.rec.waitSend(t, "echo: warm")
	h.say("bob", "T2", "refused")
	h.rec.waitSend(t, "not allowed")
	h.waitIdle()

	h.reload(Reload{Bindings: h.bindingsWith(func(bs []binding.Binding) []binding.Binding {
		bs[0].AllowUsers = []string{"alice", "bob"}
		return bs
	})})
	h.say("bob", "T1", "now allowed")
	h.rec.waitSend(t, "echo: now allowed")

	h.reload(Reload{Bindings: h.bindingsWith(func(bs []binding.Binding) []binding.Binding {
		bs[0].AllowUsers = []string{"bob"}
		return bs
	})})
	h.say("alice", "T3", "no longer allowed")
	h.rec.waitFor(t, "a second refusal", func(calls []recorded) bool {
		n := 0
		for _, c := range calls {
			if c.Kind == "send" && strings.Contains(c.Text, "not allowed") {
				n++
			}
		}
		return n == 2
	})
	h.waitIdle()
	if n := len(h.rec.sends("echo: no longer allowed")); n != 0 {
		t.Error("a user removed from allow_users still reached the agent")
	}
	// An allow-list change keeps the conversation's process.
	if n := len(h.fa.spawnsSnapshot()); n != 1 {
		t.Errorf("%d agent processes started, want 1 (allow lists apply without a restart)", n)
	}
}

func TestReloadWorkspaceChangeAtNextSessionStart(t *testing.T) {
	h := reloadHarness(t)
	newWS := t.TempDir()
	h.say("alice", "T1", "first")
	h.rec.waitSend(t, "echo: first")
	h.say("alice", "T1", "long [[WAIT]]")
	h.fa.waitFor(t, "the turn to wait", func(fa *fakeAgents) bool { return fa.waiting == 1 })

	h.reload(Reload{Bindings: h.bindingsWith(func(bs []binding.Binding) []binding.Binding {
		bs[0].Workspace = newWS
		return bs
	})})
	h.rec.waitSend(t, "The running turn finishes here first")
	if n := len(h.fa.spawnsSnapshot()); n != 1 {
		t.Fatalf("%d processes started before the running turn finished, want 1", n)
	}
	h.fa.release(t)
	h.rec.waitSend(t, "echo: long")
	h.logs.WaitRecords(t, waitLimit, "Conversation ended after a config change; its next message starts a new session", 1)
	h.fa.waitFor(t, "the old process to close", func(fa *fakeAgents) bool { return fa.live == 0 })

	h.say("alice", "T1", "second")
	h.rec.waitSend(t, "echo: second")
	spawns := h.fa.spawnsSnapshot()
	if len(spawns) != 2 {
		t.Fatalf("%d processes started, want 2", len(spawns))
	}
	if spawns[0].Dir != h.ws {
		t.Errorf("first process in %s, want %s", spawns[0].Dir, h.ws)
	}
	if got := spawns[1]; got.Dir != newWS || got.ResumeID != "" {
		t.Errorf("after the change: dir %s resume %q, want a new session in %s", got.Dir, got.ResumeID, newWS)
	}
}

func TestReloadRemovedBindingStopsAndClosesIdleProcesses(t *testing.T) {
	h := reloadHarness(t)
	h.say("alice", "T1", "hello")
	h.rec.waitSend(t, "echo: hello")
	h.waitIdle()
	if !h.e.sessionLive(t, "fake/C1/T1") {
		t.Fatal("no live process after the turn")
	}

	h.reload(Reload{Bindings: nil})
	h.rec.waitSend(t, "no longer binds this channel")
	h.fa.waitFor(t, "the idle process to close", func(fa *fakeAgents) bool { return fa.live == 0 })
	h.logs.WaitRecords(t, waitLimit, "Conversation ended after a config change; its next message starts a new session", 1)

	before := len(h.rec.snapshot())
	h.say("alice", "T1", "anyone?")
	h.waitIdle()
	if calls := h.rec.snapshot(); len(calls) != before {
		t.Errorf("a message in an unbound channel got an answer: %s", dump(calls[before:]))
	}
	if n := len(h.fa.spawnsSnapshot()); n != 1 {
		t.Errorf("%d processes started, want 1", n)
	}
}

// Admins and allow_shell are read from the binding in force at every
// command (rights_test.go), so changing them leaves the conversation and
// its process alone.
func TestReloadAdminChangeKeepsTheConversation(t *testing.T) {
	h := reloadHarness(t)
	h.say("alice", "T1", "hello")
	h.rec.waitSend(t, "echo: hello")
	h.waitIdle()
	h.reload(Reload{Bindings: h.bindingsWith(func(bs []binding.Binding) []binding.Binding {
		bs[0].Admins = nil
		bs[0].AllowShell = true
		return bs
	})})
	h.say("alice", "T1", "again")
	h.rec.waitSend(t, "echo: again")
	if spawns := h.fa.spawnsSnapshot(); len(spawns) != 1 {
		t.Errorf("spawns %+v, want the first process to go on", spawns)
	}
	if n := len(h.rec.sends("config")); n != 0 {
		t.Errorf("an admin change was announced in the thread: %q", h.rec.sends("config"))
	}
}

func TestReloadRefusesInvalidBindings(t *testing.T) {
	h := reloadHarness(t)
	ctx := context.Background()
	if err := h.e.Reload(ctx, Reload{Bindings: []binding.Binding{{Platform: "fake", Channel: "C1"}}}); err == nil {
		t.Fatal("Reload accepted a binding without a workspace")
	}
	h.say("alice", "T1", "still here")
	h.rec.waitSend(t, "echo: still here")
}

// sessionLive reports whether the conversation has a live process.
func (e *Engine) sessionLive(t *testing.T, key string) bool {
	t.Helper()
	s := e.convs.Lookup(key)
	return s != nil && s.Process() != nil
}

// runAdapter is a fake adapter that records when its Run starts and ends.
type runAdapter struct {
	*fakePlatform
	gen int
	log *runLog
}

func (r *runAdapter) Run(ctx context.Context, h platform.Handler) error {
	r.log.add(fmt.Sprintf("start %s#%d", r.name, r.gen))
	<-ctx.Done()
	r.log.add(fmt.Sprintf("stop %s#%d", r.name, r.gen))
	return nil
}

// runLog is the start and stop events of a test's runAdapters, in order.
type runLog struct {
	mu      sync.Mutex // guards entries and changed
	entries []string
	changed chan struct{}
}

func (l *runLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
	if l.changed != nil {
		close(l.changed)
	}
	l.changed = make(chan struct{})
}

// wait waits until the log holds want and returns the entries so far.
func (l *runLog) wait(t *testing.T, want string) []string {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		entries, ch := slices.Clone(l.entries), l.changed
		l.mu.Unlock()
		if slices.Contains(entries, want) {
			return entries
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("no %q; adapter events %v", want, entries)
		}
	}
}

func TestReloadRestartsOnlyTheChangedAdapter(t *testing.T) {
	h := reloadHarness(t)
	log := &runLog{}
	a1 := &runAdapter{fakePlatform: newFakePlatform("a"), gen: 1, log: log}
	b1 := &runAdapter{fakePlatform: newFakePlatform("b"), gen: 1, log: log}
	h.reload(Reload{Bindings: h.opts.Bindings, Adapters: []platform.Adapter{a1, b1}})
	log.wait(t, "start a#1")
	log.wait(t, "start b#1")

	b2 := &runAdapter{fakePlatform: newFakePlatform("b"), gen: 2, log: log}
	h.reload(Reload{Bindings: h.opts.Bindings, Adapters: []platform.Adapter{b2}})
	got := log.wait(t, "start b#2")
	stop, start := slices.Index(got, "stop b#1"), slices.Index(got, "start b#2")
	if stop < 0 || stop > start {
		t.Errorf("adapter events %v: the old b must stop before the new one starts", got)
	}
	if slices.Contains(got, "stop a#1") {
		t.Errorf("adapter events %v: a was restarted though its config did not change", got)
	}
	if a, _ := h.e.ads.get("b"); a != platform.Adapter(b2) {
		t.Errorf("messages from b route to %v, want the new adapter", a)
	}

	h.reload(Reload{Bindings: h.opts.Bindings, Remove: []string{"a"}})
	log.wait(t, "stop a#1")
	if _, ok := h.e.ads.get("a"); ok {
		t.Error("a removed adapter is still registered")
	}
	// The harness's own adapter kept running throughout.
	h.say("alice", "T1", "still here")
	h.rec.waitSend(t, "echo: still here")
}

func TestNotifyAdminsOncePerPlatform(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "older")
	h.rec.waitSend(t, "echo: older")
	h.waitIdle()
	h.say("alice", "T2", "newer")
	h.rec.waitSend(t, "echo: newer")
	h.waitIdle()

	told := h.e.NotifyAdmins(context.Background(), "the config has errors.")
	if fmt.Sprint(told) != "[fake]" {
		t.Errorf("told %v, want [fake]", told)
	}
	h.rec.waitSend(t, "the config has errors")
	h.waitIdle()
	notices := h.rec.kinds("send")
	var got []recorded
	for _, c := range notices {
		if strings.Contains(c.Text, "the config has errors") {
			got = append(got, c)
		}
	}
	if len(got) != 1 || got[0].To.Thread != "T2" || !strings.HasPrefix(got[0].Text, "Admins (alice): ") {
		t.Errorf("notices %s, want one in T2 addressed to alice", dump(got))
	}
}

func TestReloadWorkspaceChangeOfIdleConversation(t *testing.T) {
	h := reloadHarness(t)
	newWS := t.TempDir()
	h.say("alice", "T1", "first")
	h.rec.waitSend(t, "echo: first")
	h.waitIdle()
	h.reload(Reload{Bindings: h.bindingsWith(func(bs []binding.Binding) []binding.Binding {
		bs[0].Workspace = newWS
		return bs
	})})
	h.rec.waitSend(t, "your next message starts a new session there")
	h.logs.WaitRecords(t, waitLimit, "Conversation ended after a config change; its next message starts a new session", 1)
	h.say("alice", "T1", "second")
	h.rec.waitSend(t, "echo: second")
	if s := h.fa.spawnsSnapshot(); len(s) != 2 || s[1].Dir != newWS || s[1].ResumeID != "" {
		t.Errorf("spawns %+v, want a fresh session in %s", s, newWS)
	}
}

// TestReloadReplacedAdapterServesTheNextSession: after a credential
// change replaced the platform's adapter, the conversation's next message
// is answered through the new adapter, resuming the same session.
func TestReloadReplacedAdapterServesTheNextSession(t *testing.T) {
	h := reloadHarness(t)
	h.say("alice", "T1", "before")
	h.rec.waitSend(t, "echo: before")
	h.waitIdle()

	fresh := newFakePlatform("fake")
	h.reload(Reload{Bindings: h.opts.Bindings, Adapters: []platform.Adapter{richPlatform{fresh}}})
	h.logs.WaitRecords(t, waitLimit, "Conversation ended after a config change; its next message starts a new session", 1)
	h.say("alice", "T1", "after")
	fresh.waitSend(t, "echo: after")
	if n := len(h.rec.sends("echo: after")); n != 0 {
		t.Error("the reply went through the replaced adapter")
	}
	if s := h.fa.spawnsSnapshot(); len(s) != 2 || s[1].ResumeID == "" {
		t.Errorf("spawns %+v, want the session resumed", s)
	}
}

// TestReloadReplacedAdapterServesTheRunningTurn: a turn that was running
// when a reload replaced the platform's adapter (new credentials) posts its
// reply and reactions through the new adapter, not the stopped one.
func TestReloadReplacedAdapterServesTheRunningTurn(t *testing.T) {
	h := reloadHarness(t)
	msg := h.message("alice", "T1", "long [[WAIT]]")
	h.deliver(msg)
	h.fa.waitFor(t, "the turn to wait", func(fa *fakeAgents) bool { return fa.waiting == 1 })

	fresh := newFakePlatform("fake")
	h.reload(Reload{Bindings: h.opts.Bindings, Adapters: []platform.Adapter{richPlatform{fresh}}})
	h.fa.release(t)
	fresh.waitSend(t, "echo: long")
	fresh.waitFor(t, "the done reaction", func(calls []recorded) bool {
		return slices.ContainsFunc(calls, func(c recorded) bool {
			return c.Kind == "react" && c.Text == "white_check_mark" && c.To.MessageID == msg.Target.MessageID
		})
	})
	h.waitIdle()
	if n := len(h.rec.sends("echo: long")); n != 0 {
		t.Error("the running turn's reply went through the replaced adapter")
	}
}

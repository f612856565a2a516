package engine

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/cluster"
	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/cluster/names"
)

// events records what the engine publishes.
type events struct {
	mu  sync.Mutex
	got []activity.Event
}

func (r *events) Record(e activity.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, e)
}

func (r *events) of(k activity.Kind) []activity.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []activity.Event
	for _, e := range r.got {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// TestLeaseMovesArePublished: the host that takes a binding's lease
// publishes it, with its name; stopping to serve it publishes the
// release; the standby that takes it over publishes its own.
func TestLeaseMovesArePublished(t *testing.T) {
	srv := clustertest.Single(t)
	hosts := map[string]*events{"a": {}, "b": {}}
	clock := clustertest.NewClock() // the leases', moved by the test only
	leases := map[string]*clustertest.Leases{"a": clustertest.NewLeases(), "b": clustertest.NewLeases()}
	serve := func(name string) func() {
		h := newHarness(t, func(o *Options, c *harnessConfig) { o.Activity = hosts[name] })
		h.stop() // JoinCluster must precede Run: a fresh engine on the harness's options
		var node *cluster.Node
		_, ci := runClusterEngine(t, name, h, &node)
		s := cluster.Settings{Host: name, Members: []string{"a", "b"}, URLs: []string{srv.ClientURL()},
			StateDir: filepath.Join(t.TempDir(), "state"), LeaseTTL: clusterTTL, Replicas: 1, Names: names.Names{Prefix: "t"},
			Bindings: []cluster.BindingSpec{{Binding: fakeAll, Host: "a", Standby: []string{"b"}}}}
		s.ConfigHash = s.Fingerprint()
		n := startClusterNode(t, s, clock, leases[name])
		node = n
		sctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- n.ServeBinding(sctx, fakeAll, testLink{ci: ci}) }()
		var once sync.Once
		halt := func() { once.Do(func() { stop(); <-done }) }
		t.Cleanup(halt)
		// Stopping to serve and closing the node: the lease is left to
		// expire, and the standby takes it.
		return func() { halt(); n.Close() }
	}
	lease := func(name string) []string {
		var out []string
		for _, e := range hosts[name].of(activity.Lease) {
			if e.Host != name || e.Binding != "fake/*" || e.Platform != "fake" || e.Time.IsZero() {
				t.Errorf("host %s published %+v", name, e)
			}
			out = append(out, e.Outcome)
		}
		return out
	}
	stopA := serve("a")
	pollFor(t, "host a publishing its lease", func() bool { return len(lease("a")) == 1 })
	serve("b")
	stopA()
	leases["b"].ExpireFor(t, clock, leases["a"].Acquired(t, names.BindingLease(fakeAll)))
	pollFor(t, "host b publishing the lease it took over", func() bool { return len(lease("b")) == 1 })
	if got := lease("a"); !slices.Equal(got, []string{"taken", "released"}) {
		t.Errorf("host a published %q, want taken then released", got)
	}
	if got := lease("b"); !slices.Equal(got, []string{"taken"}) {
		t.Errorf("host b published %q, want taken", got)
	}
}

func TestRightsChanges(t *testing.T) {
	b := func(ch string, allow, approvers, admins []string, shell bool) binding.Binding {
		return binding.Binding{Platform: "slack", Channel: ch, Workspace: "/w", AllowUsers: allow, Approvers: approvers, Admins: admins, AllowShell: shell}
	}
	old := []binding.Binding{
		b("C1", []string{"U1", "U2"}, nil, []string{"U1"}, false),
		b("C2", []string{"*"}, nil, nil, false),
		b("C3", []string{"U1"}, nil, nil, false),
	}
	cur := []binding.Binding{
		b("C1", []string{"U2", "U3"}, []string{"U2"}, []string{"U1", "U3"}, true),
		b("C2", []string{"*"}, nil, nil, false), // unchanged
		b("C4", []string{"U9"}, nil, []string{"U9"}, false),
	}
	got := rightsChanges(old, cur)
	want := []rightsChange{
		{Binding: "slack/C1", Platform: "slack", Change: "allow_users: +U3 -U1; approvers: +U2; admins: +U3; allow_shell: false → true"},
		{Binding: "slack/C4", Platform: "slack", Change: "added; allow_users: +U9; admins: +U9"},
		{Binding: "slack/C3", Platform: "slack", Change: "removed"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("rightsChanges =\n%+v\nwant\n%+v", got, want)
	}
}

// TestReloadPublishesRights: a reload through the engine publishes what
// changed and the rights it changed, before the next message is checked
// against them.
func TestReloadPublishesRights(t *testing.T) {
	rec := &events{}
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.Activity = rec })
	bs := slices.Clone(h.opts.Bindings)
	bs[0].Admins = nil
	bs[0].AllowShell = true
	if err := h.e.Reload(context.Background(), Reload{Bindings: bs, Changes: []string{"binding fake/* changed (admins, allow_shell)"}}); err != nil {
		t.Fatal(err)
	}
	r, rights := rec.of(activity.Reloaded), rec.of(activity.Rights)
	if len(r) != 1 || !strings.Contains(r[0].Input, "admins, allow_shell") {
		t.Errorf("reloaded events %+v", r)
	}
	if len(rights) != 1 || rights[0].Binding != "fake/*" || rights[0].Input != "admins: -alice; allow_shell: false → true" {
		t.Errorf("rights events %+v", rights)
	}
}

// TestAnswersArePublished: who answered Claude's question and what, who
// sent feedback on a plan and what it said, and a permission's answer,
// each as one "answered" after its "asking".
func TestAnswersArePublished(t *testing.T) {
	rec := &events{}
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.Activity = rec })
	h.say("alice", "T1", "[[ASK]] pick one")
	h.rec.waitSend(t, "Which color?")
	h.say("bob", "T1", "2")
	h.rec.waitSend(t, "answer: ")
	h.say("alice", "T1", "[[PLAN]] make a plan")
	asked := func(sub string) {
		t.Helper()
		h.rec.waitFor(t, "a prompt with "+sub, func(rs []recorded) bool {
			return slices.ContainsFunc(rs, func(r recorded) bool { return r.Kind == "ask" && strings.Contains(r.Prompt.Text, sub) })
		})
	}
	asked("1. Change the thing.")
	h.say("bob", "T1", "paint it green instead")
	h.rec.waitSend(t, "plan denied: ")
	h.say("alice", "T1", "[[TOOL:rm -rf build]]")
	asked("rm -rf build")
	h.say("bob", "T1", "!deny")
	h.rec.waitSend(t, "denied: ")
	h.waitIdle()

	asking, answered := rec.of(activity.Asking), rec.of(activity.Answered)
	var tools []string
	for _, e := range asking {
		tools = append(tools, e.Tool)
	}
	if !slices.Equal(tools, []string{"AskUserQuestion", "ExitPlanMode", "Bash"}) || !strings.Contains(asking[0].Input, "Which color?") {
		t.Fatalf("asking events %+v", asking)
	}
	if len(answered) != 3 {
		t.Fatalf("answered events %+v, want 3", answered)
	}
	for i, want := range []struct{ tool, choice, input string }{
		{"AskUserQuestion", "answered", "Which color? → Blue"},
		{"ExitPlanMode", "plan_feedback", "paint it green instead"},
		{"Bash", "deny", ""},
	} {
		e := answered[i]
		if e.User != "bob" || e.UserName != "bob" || e.Tool != want.tool || e.Choice != want.choice || e.Input != want.input ||
			e.Conversation != "fake/C1/T1" || e.Outcome == "" {
			t.Errorf("answered[%d] = %+v, want bob's %s %s %q", i, e, want.tool, want.choice, want.input)
		}
	}
	// Every event of the conversation came in order: asked before started.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	nAsked, started := 0, 0
	for _, e := range rec.got {
		switch e.Kind {
		case activity.Asked:
			nAsked++
		case activity.Started:
			started++
			if started > nAsked {
				t.Fatalf("a turn started before its message was asked: %+v", rec.got)
			}
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/spend"
	"github.com/cc-connect/cc-connect/trigger"
	"github.com/cc-connect/cc-connect/webhook"
)

// runSink is a trigger.Submitter that takes every run once.
type runSink struct {
	mu   sync.Mutex
	seen map[string]bool
	got  chan trigger.Run
}

func newRunSink() *runSink { return &runSink{seen: map[string]bool{}, got: make(chan trigger.Run, 16)} }

func (s *runSink) Submit(_ context.Context, r trigger.Run) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[r.ID] {
		return trigger.ErrDuplicate
	}
	s.seen[r.ID] = true
	s.got <- r
	return nil
}

func (s *runSink) Working(string) bool { return false }

func (s *runSink) next(t *testing.T) trigger.Run {
	t.Helper()
	select {
	case r := <-s.got:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("no run submitted")
		return trigger.Run{}
	}
}

// signedPost posts body to a hook as GitHub would, signed with secret
// (none when secret is empty), and returns the status and the answer.
func signedPost(t *testing.T, url, secret, event, body string) (int, map[string]string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	if secret != "" {
		req.Header.Set("X-Hub-Signature-256", webhook.Sign([]byte(secret), []byte(body)))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var ans map[string]string
	_ = json.Unmarshal(b, &ans)
	return resp.StatusCode, ans
}

// TestUnattendedWiring starts what run starts from a config's
// [[schedules]] and [webhooks]: a schedule fires on the injected clock,
// a signed request becomes a run and an unsigned one is refused, each
// reaching the submitter with the config's target and prompt.
func TestUnattendedWiring(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeConfig(t, dir, `
[state]
dir = "state"
[webhooks]
addr = "127.0.0.1:0"
[[webhooks.hooks]]
name = "ci-failed"
secret = "a-secret-of-sixteen-chars"
platform = "tty"
channel = "local"
prompt = "CI failed: look at it."
template = "Run {{.workflow_run.id}}: {{.workflow_run.conclusion}}"
[[schedules]]
name = "noon"
platform = "tty"
channel = "local"
cron = "0 12 * * *"
timezone = "UTC"
prompt = "Say noon."
`+localChatTOML)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := prepareStateDir(cfg.State.Dir); err != nil {
		t.Fatal(err)
	}
	clock := clockwork.NewFakeClockAt(time.Date(2026, 3, 10, 11, 59, 0, 0, time.UTC))
	un, err := openUnattended(cfg, clock, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer un.close()
	sink := newRunSink()
	if _, err := un.scheduler(cfg, sink, nil, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	if err := un.start(ctx, cfg, sink); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); un.wait() }()

	if err := clock.BlockUntilContext(ctx, 1); err != nil { // the scheduler waits for noon
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	r := sink.next(t)
	if r.ID != "schedule:noon@2026-03-10T12:00Z" || r.Platform != "tty" || r.Channel != "local" || r.Prompt != "Say noon." {
		t.Errorf("scheduled run %+v", r)
	}

	url := "http://" + un.ln.Addr().String() + "/hooks/ci-failed"
	body := `{"action":"completed","workflow_run":{"id":42,"conclusion":"failure"}}`
	if code, _ := signedPost(t, url, "", "workflow_run", body); code != http.StatusUnauthorized {
		t.Errorf("unsigned request: %d, want 401", code)
	}
	code, ans := signedPost(t, url, "a-secret-of-sixteen-chars", "workflow_run", body)
	if code != http.StatusAccepted || ans["status"] != "accepted" {
		t.Fatalf("signed request: %d %v, want 202 accepted", code, ans)
	}
	r = sink.next(t)
	if r.Kind != trigger.KindWebhook || r.Channel != "local" || !strings.Contains(r.Prompt, "CI failed: look at it.") ||
		!strings.Contains(r.Prompt, "Run 42: failure") {
		t.Errorf("webhook run %+v", r)
	}
	if code, ans := signedPost(t, url, "a-secret-of-sixteen-chars", "workflow_run", body); code != http.StatusOK || ans["status"] != "duplicate" {
		t.Errorf("replayed request: %d %v, want 200 duplicate", code, ans)
	}
}

// The bindings the engine gets (at start and at each reload) carry the
// worktree flag and the caps, so that a cap edited in the file applies
// from the next turn.
func TestEngineBindingsCarryWorktreeAndCaps(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Bindings: []config.Binding{
		{Platform: "tty", Channel: "local", Workspace: "/ws", Worktree: true,
			CapDailyUSD: 20, CapMonthlyUSD: 300, CapUserDailyUSD: 5, CapUserMonthlyUSD: 50},
		{Platform: "tty", Channel: "other", Workspace: "/ws"},
	}}
	bs := cfg.BindingSpecs()
	if !bs[0].Worktree || bs[0].Caps != (spend.Caps{Daily: 20, Monthly: 300, UserDaily: 5, UserMonthly: 50}) {
		t.Errorf("binding 0: worktree %t, caps %+v", bs[0].Worktree, bs[0].Caps)
	}
	if bs[1].Worktree || bs[1].Caps.Any() {
		t.Errorf("binding 1: worktree %t, caps %+v; want neither", bs[1].Worktree, bs[1].Caps)
	}
}

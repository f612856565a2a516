package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/faketelegram"
)

// auditConfig is the config of TestAuditTrailThroughTheBinary: a Telegram
// bot (the fake Bot API) where alice (7) is an admin with !sh and bob (8)
// may only talk, a schedule and a signed webhook hook on the same chat.
func auditConfig(claude, claudeDir, record, apiURL, admins string) string {
	return fmt.Sprintf(`
[state]
dir = "state"
[log]
level = "debug"
[agent]
command = %q
env = { CLAUDE_CONFIG_DIR = %q, FAKECLAUDE_RECORD = %q }
shutdown_grace = "5s"
[[platforms]]
name = "chat"
type = "telegram"
token = "${TELEGRAM_BOT_TOKEN}"
api_url = %q
[[bindings]]
platform = "chat"
channel = "*"
workspace = "ws"
allow_users = ["7", "8"]
admins = [%s]
allow_shell = true
[webhooks]
addr = "127.0.0.1:0"
[[webhooks.hooks]]
name = "deploy"
secret = "${HOOK_SECRET}"
platform = "chat"
channel = "42"
prompt = "A deploy happened."
template = "Deployed {{.ref}}"
[[schedules]]
name = "noon"
platform = "chat"
channel = "42"
cron = "0 12 * * *"
timezone = "UTC"
prompt = "Say the noon word."
`, claude, claudeDir, record, apiURL, admins)
}

// TestAuditTrailThroughTheBinary drives every kind of event the trail
// keeps through the built binary (the real Telegram adapter against the
// fake Bot API, the fake claude, a webhook, a schedule on the test clock, a
// reload that fails and one that changes rights), with the config's
// secrets (the bot token and the hook's secret) typed into every text that
// reaches the trail: a message, a tool's command, an approval, !sh, a
// refused !sh, the webhook's payload, the failed reload's error. Then:
// every kind is in the file, no secret is, and `cc-connect audit` reads it
// back with its filters.
func TestAuditTrailThroughTheBinary(t *testing.T) {
	t.Parallel()
	f := faketelegram.New(t)
	dir := t.TempDir()
	hookSecret := "hookcanary-" + uuid.NewString()
	botToken := faketelegram.Token
	canaries := []string{hookSecret, botToken}
	both := hookSecret + " " + botToken
	claude, claudeDir, record := fakeclaude.Build(t), filepath.Join(dir, "claude-config"), filepath.Join(dir, "record.jsonl")
	path := writeConfig(t, dir, auditConfig(claude, claudeDir, record, f.URL(), `"7"`))
	day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	clock := newTestClock(t, day.Add(11*time.Hour+59*time.Minute))
	bin := buildClockBinary(t)
	p := startBinaryPath(t, bin, []string{"TELEGRAM_BOT_TOKEN=" + botToken, "HOOK_SECRET=" + hookSecret,
		"CC_CONNECT_TEST_CLOCK=" + clock.path, "TMPDIR=" + t.TempDir()}, "run", "--config", path)
	f.Wait(t, "the first poll", func() bool { return len(f.Calls("getUpdates")) > 0 })
	p.waitErr(t, `msg="Writing the audit trail"`)

	alice, bob := faketelegram.User(7, "alice", false), faketelegram.User(8, "bob", false)
	const chat = 42
	send := func(from map[string]any, text string) int {
		return f.Send(map[string]any{"chat": map[string]any{"id": chat, "type": "private"}, "from": from, "text": text})
	}
	sent := func(what, substr string) faketelegram.Message {
		return f.WaitSent(t, what, func(m faketelegram.Message) bool { return m.ChatID == chat && strings.Contains(m.Text, substr) })
	}

	// asked, started, tool (no prompt for echo), asking, answered, finished.
	send(alice, "tidy up "+both+" [[TOOL:echo "+both+"]] [[TOOL:rm -rf "+both+"]]")
	prompt := f.WaitSent(t, "the permission prompt", func(m faketelegram.Message) bool { return m.ChatID == chat && len(m.Buttons()) > 0 })
	var allow string
	for _, b := range prompt.Buttons() {
		if isAllow(b.Text) {
			allow = b.Text
		}
	}
	q := f.Press(t, prompt, allow, alice)
	f.Wait(t, "the button press answered", func() bool { return f.Answered(q) })
	sent("the reply after the tool ran", "(fake) ran: rm -rf")

	// !sh by the admin runs; by bob it is refused.
	send(alice, "!sh echo "+both)
	sent("the shell's result", "$ echo "+hookSecret) // (the chat is not the trail: it shows what ran)
	send(bob, "!sh echo "+both)
	f.WaitSent(t, "the refusal of bob's !sh", func(m faketelegram.Message) bool {
		return m.ChatID == chat && strings.Contains(strings.ToLower(m.Text), "admin")
	})

	// !stop on a turn that runs until interrupted.
	slow := send(alice, "[[SLOW]] a long one")
	f.WaitMessage(t, chat, slow, "👀 on the long turn", func(m faketelegram.Message) bool { return slices.Contains(m.Reactions, "👀") })
	send(alice, "!stop")
	f.WaitMessage(t, chat, slow, "the long turn ended", func(m faketelegram.Message) bool { return !slices.Contains(m.Reactions, "👀") })

	// A signed webhook whose payload carries the secrets.
	url := "http://" + webhookAddr(t, p) + "/hooks/deploy"
	body := fmt.Sprintf(`{"ref":%q}`, both)
	if code, ans := signedPost(t, url, hookSecret, "push", body); code != http.StatusAccepted {
		t.Fatalf("signed webhook: %d %v, want 202", code, ans)
	}
	sent("the webhook run's reply", "Deployed ")

	// The schedule fires on the test clock.
	clock.setAndWait(t, p, day.Add(12*time.Hour+30*time.Second))
	sent("the scheduled run's reply", "Say the noon word.")

	// A reload that fails, its error quoting the secrets (typed into a
	// workspace's path); then one that makes bob an admin and turns !sh
	// off.
	writeConfig(t, dir, strings.Replace(auditConfig(claude, claudeDir, record, f.URL(), `"7"`),
		`workspace = "ws"`, `workspace = "ws-`+both+`"`, 1))
	p.waitErr(t, `msg="Config reload failed; the running config stays"`)
	cfg := auditConfig(claude, claudeDir, record, f.URL(), `"7", "8"`)
	cfg = strings.Replace(cfg, "allow_shell = true", "allow_shell = false", 1)
	writeConfig(t, dir, cfg)
	p.waitErr(t, `msg="Config change applied"`)

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}

	trailPath := filepath.Join(dir, "state", "audit", "audit.jsonl")
	raw, err := os.ReadFile(trailPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range canaries {
		if bytes.Contains(raw, []byte(c)) {
			t.Errorf("a secret (%.12s…) is in the audit trail:\n%s", c, raw)
		}
	}
	if !bytes.Contains(raw, []byte("[redacted]")) {
		t.Errorf("no [redacted] in the trail: the secrets' texts did not reach it:\n%s", raw)
	}
	for p, want := range map[string]os.FileMode{trailPath: 0o600, filepath.Dir(trailPath): 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want mode %04o", p, fi.Mode(), err, want)
		}
	}

	// Read back through `cc-connect audit --json`.
	audit := func(args ...string) []activity.Event {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"audit", "--config", path}, args...)...)
		cmd.Env = append(os.Environ(), "TELEGRAM_BOT_TOKEN="+botToken, "HOOK_SECRET="+hookSecret)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("cc-connect audit %v: %v\n%s", args, err, errOut.String())
		}
		var evs []activity.Event
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if l == "" {
				continue
			}
			var e activity.Event
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("cc-connect audit --json printed %q: %v", l, err)
			}
			evs = append(evs, e)
		}
		return evs
	}
	all := audit("--json")
	kinds := map[activity.Kind][]activity.Event{}
	for _, e := range all {
		kinds[e.Kind] = append(kinds[e.Kind], e)
	}
	for _, k := range []activity.Kind{activity.Asked, activity.Started, activity.Finished, activity.Tool, activity.Asking,
		activity.Answered, activity.Shell, activity.Stopped, activity.Webhook, activity.Scheduled, activity.Reloaded, activity.Rights} {
		if len(kinds[k]) == 0 {
			t.Errorf("no %s event in the trail:\n%s", k, raw)
		}
	}
	has := func(k activity.Kind, cond func(activity.Event) bool, what string) {
		t.Helper()
		if !slices.ContainsFunc(kinds[k], cond) {
			t.Errorf("no %s event %s; %s events: %+v", k, what, k, kinds[k])
		}
	}
	has(activity.Asked, func(e activity.Event) bool {
		return e.User == "7" && strings.Contains(e.Text, "tidy up [redacted] [redacted]") && e.Conversation == "chat/42/" && e.Binding == "chat/*"
	}, "for alice's message, with its secrets redacted")
	has(activity.Tool, func(e activity.Event) bool {
		return e.Tool == "Bash" && strings.Contains(e.Input, "echo [redacted] [redacted]")
	},
		"for the echo, its command redacted")
	has(activity.Asking, func(e activity.Event) bool { return e.Tool == "Bash" && strings.Contains(e.Input, "rm -rf [redacted]") },
		"for the rm")
	has(activity.Answered, func(e activity.Event) bool { return e.User == "7" && e.Tool == "Bash" && e.Choice == "allow" },
		"of alice allowing the rm")
	has(activity.Shell, func(e activity.Event) bool { return e.User == "7" && strings.HasPrefix(e.Outcome, "exit 0") },
		"of alice's !sh exiting 0")
	has(activity.Shell, func(e activity.Event) bool {
		return e.User == "8" && strings.HasPrefix(e.Outcome, "refused") && strings.Contains(e.Input, "echo [redacted]")
	}, "of bob's refused !sh")
	has(activity.Stopped, func(e activity.Event) bool { return e.User == "7" }, "by alice")
	has(activity.Finished, func(e activity.Event) bool { return e.Outcome == "interrupted" }, "of the stopped turn")
	has(activity.Webhook, func(e activity.Event) bool {
		return e.Input == "deploy" && strings.Contains(e.Text, "Deployed [redacted]")
	},
		"for the deploy hook, its payload redacted")
	has(activity.Scheduled, func(e activity.Event) bool { return e.Input == "noon" && e.User == "schedule:noon" }, "for noon")
	has(activity.Reloaded, func(e activity.Event) bool {
		return strings.HasPrefix(e.Outcome, "failed: bindings[0].workspace: ") && strings.Contains(e.Outcome, "ws-[redacted] [redacted]")
	}, "for the failed reload, saying what failed, its secrets redacted")
	has(activity.Rights, func(e activity.Event) bool {
		return e.Binding == "chat/*" && strings.Contains(e.Input, "admins: +8") && strings.Contains(e.Input, "allow_shell: true → false")
	}, "saying bob became an admin and !sh was turned off")

	// A message's asked precedes its turn's started.
	first := func(k activity.Kind) int {
		return slices.IndexFunc(all, func(e activity.Event) bool { return e.Kind == k && e.Conversation == "chat/42/" })
	}
	if a, s := first(activity.Asked), first(activity.Started); a < 0 || s < 0 || a > s {
		t.Errorf("asked at %d, started at %d: asked must come first", a, s)
	}

	// The filters.
	for _, e := range audit("--json", "--user", "bob") {
		if e.User != "8" && !strings.EqualFold(e.UserName, "bob") {
			t.Errorf("--user bob printed %+v", e)
		}
	}
	if got := audit("--json", "--kind", "shell,stopped"); len(got) != len(kinds[activity.Shell])+len(kinds[activity.Stopped]) {
		t.Errorf("--kind shell,stopped printed %d events, want %d", len(got), len(kinds[activity.Shell])+len(kinds[activity.Stopped]))
	}
	if got := audit("--json", "--conversation", "chat/42"); len(got) == 0 || slices.ContainsFunc(got, func(e activity.Event) bool {
		return !strings.HasPrefix(e.Conversation, "chat/42/")
	}) {
		t.Errorf("--conversation chat/42 printed %+v", got)
	}
	if got := audit("--json", "--until", "2000-01-01"); len(got) != 0 {
		t.Errorf("--until 2000-01-01 printed %d events", len(got))
	}
	// The readable form: one line an event.
	cmd := exec.Command(bin, "audit", "--config", path, "--kind", "answered")
	cmd.Env = append(os.Environ(), "TELEGRAM_BOT_TOKEN="+botToken, "HOOK_SECRET="+hookSecret)
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), "answered   chat/42/  alice (7): Bash") {
		t.Errorf("cc-connect audit --kind answered: %v\n%s", err, out)
	}
}

func TestAuditFlags(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		err  bool
	}{
		{"", time.Time{}, false},
		{"2h", now.Add(-2 * time.Hour), false},
		{"7d", now.AddDate(0, 0, -7), false},
		{"2026-03-01T10:00:00Z", time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), false},
		{"2026-03-01", time.Date(2026, 3, 1, 0, 0, 0, 0, time.Local), false},
		{"2026-03-01 10:30", time.Date(2026, 3, 1, 10, 30, 0, 0, time.Local), false},
		{"yesterday", time.Time{}, true},
		{"-2h", time.Time{}, true},
		{"1.5d", time.Time{}, true},
	} {
		got, err := parseWhen(tc.in, now)
		if (err != nil) != tc.err || !got.Equal(tc.want) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v (error %t)", tc.in, got, err, tc.want, tc.err)
		}
	}
	if k, err := parseKinds("asked, tool,lost"); err != nil || len(k) != 3 {
		t.Errorf("parseKinds = %v, %v", k, err)
	}
	if _, err := parseKinds("asked,bogus"); err == nil || !strings.Contains(err.Error(), `"bogus" is not one of asked,`) {
		t.Errorf("parseKinds of an unknown kind: %v", err)
	}
	code, _, stderr := runCLI(t, "audit", "--kind", "bogus")
	if code != exitUsage || !strings.Contains(stderr, "--kind") {
		t.Errorf("audit --kind bogus: exit %d, %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "audit", "--since", "soon")
	if code != exitUsage || !strings.Contains(stderr, "--since") {
		t.Errorf("audit --since soon: exit %d, %q", code, stderr)
	}
}

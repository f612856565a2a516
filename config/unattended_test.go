package config

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/testenv"
)

// unattendedBase has a Slack platform with one bound channel and one
// wildcard-bound Discord (open to its users only, not to all: that warns),
// for targets to point at.
const unattendedBase = `
[[platforms]]
name = "slack"
type = "slack"
bot_token = "xoxb-1"
app_token = "xapp-1"
[[platforms]]
name = "discord"
type = "discord"
token = "d"
[[bindings]]
platform = "slack"
channel = "C1"
workspace = "ws"
allow_users = ["*"]
[[bindings]]
platform = "discord"
workspace = "ws"
allow_users = ["d1"]
`

const fullUnattended = unattendedBase + `
[spend]
timezone = "Europe/Paris"
admins_exempt = true

[webhooks]
addr = "127.0.0.1:9465"
max_body = "2MiB"

[[webhooks.hooks]]
name = "ci-failed"
secret = "${HOOK_SECRET}"
platform = "slack"
channel = "C1"
filter = '{{eq .workflow_run.conclusion "failure"}}'
prompt = "CI failed: look at it."
template = '''
{{range $i, $p := .workflow_run.pull_requests}}PR {{$p.number}}{{end}}
Logs: {{.workflow_run.html_url}}
'''

[[schedules]]
name = "nightly-triage"
platform = "slack"
channel = "C1"
cron = "30 2 * * *"
timezone = "America/New_York"
prompt = "Triage."

[[schedules]]
name = "standup"
platform = "discord"
channel = "123"
thread = "456"
continue = true
cron = "CRON_TZ=Asia/Tokyo 0 9 * * 1-5"
catch_up = "0s"
overlap = "wait"
prompt = "Post the standup notes; cost limit $$5."
`

func TestLoadUnattended(t *testing.T) {
	t.Parallel()
	cfg, err := load(writeConfig(t, fullUnattended), envMap(map[string]string{"HOOK_SECRET": "0123456789abcdef-secret"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %q", cfg.Warnings)
	}
	if s := cfg.Spend; s.Timezone != "Europe/Paris" || !s.AdminsExempt {
		t.Errorf("spend %+v", s)
	}
	w := cfg.Webhooks
	if w.Addr != "127.0.0.1:9465" || w.MaxBody != 2<<20 || len(w.Hooks) != 1 {
		t.Fatalf("webhooks %+v", w)
	}
	h := w.Hooks[0]
	if h.Secret.Reveal() != "0123456789abcdef-secret" || !strings.Contains(string(h.Template), "{{range $i, $p :=") || h.Sender != "" {
		t.Errorf("hook %+v", h)
	}
	if len(cfg.Schedules) != 2 {
		t.Fatalf("schedules %+v", cfg.Schedules)
	}
	a, b := cfg.Schedules[0], cfg.Schedules[1]
	if a.CatchUp.D() != time.Hour || a.Overlap != "skip" || a.Continue || a.Timezone != "America/New_York" {
		t.Errorf("schedule defaults %+v", a)
	}
	if b.CatchUp != 0 || b.Overlap != "wait" || !b.Continue || b.Thread != "456" || b.Prompt != "Post the standup notes; cost limit $5." {
		t.Errorf("schedule %+v", b)
	}
	out := cfg.String()
	if strings.Contains(out, "0123456789abcdef-secret") || !strings.Contains(out, `secret = "[redacted]"`) {
		t.Errorf("String() shows the hook secret, or not that it is set:\n%s", out)
	}
	for _, want := range []string{"[[schedules]]\nname = \"standup\"", "[webhooks]\naddr = \"127.0.0.1:9465\"", "timezone = \"Europe/Paris\""} {
		if !strings.Contains(out, want) {
			t.Errorf("String() lacks %q:\n%s", want, out)
		}
	}
}

func TestUnattendedErrors(t *testing.T) {
	t.Parallel()
	sched := func(body string) string {
		return unattendedBase + "[[schedules]]\n" + body
	}
	okSched := "name = \"n\"\nplatform = \"slack\"\nchannel = \"C1\"\ncron = \"0 2 * * *\"\nprompt = \"p\"\n"
	hook := func(body string) string {
		return unattendedBase + "[webhooks]\naddr = \"127.0.0.1:9465\"\n[[webhooks.hooks]]\n" + body
	}
	okHook := "name = \"h\"\nsecret = \"0123456789abcdef\"\nplatform = \"slack\"\nchannel = \"C1\"\nprompt = \"p\"\ntemplate = \"{{.a}}\"\n"
	tests := []struct {
		name, text, want string
	}{
		{"schedule name", sched(strings.Replace(okSched, `"n"`, `"a b"`, 1)), `schedules[0].name: "a b" is not a name`},
		{"duplicate schedule", sched(okSched + "[[schedules]]\n" + okSched), `schedules[1].name: "n" is already used by schedules[0]`},
		{"unknown platform", sched(strings.Replace(okSched, `"slack"`, `"irc"`, 1)), `schedules[0].platform: "irc" is not the name of any [[platforms]] entry`},
		{"wildcard channel", sched(strings.Replace(okSched, `"C1"`, `"*"`, 1)), `schedules[0].channel: is required: the id of the channel`},
		{"unrouted channel", sched(strings.Replace(okSched, `"C1"`, `"C2"`, 1)), `schedules[0].channel: no [[bindings]] entry routes slack/C2`},
		{"bad cron", sched(strings.Replace(okSched, `"0 2 * * *"`, `"0 25 * * *"`, 1)), `schedules[0].cron: invalid cron expression`},
		{"every", sched(strings.Replace(okSched, `"0 2 * * *"`, `"@every 5m"`, 1)), `@every is not supported`},
		{"zone twice", sched(strings.Replace(okSched, `"0 2 * * *"`, `"CRON_TZ=UTC 0 2 * * *"`, 1) + "timezone = \"UTC\"\n"), `keep one`},
		{"bad zone", sched(okSched + "timezone = \"Mars/Base\"\n"), `schedules[0].cron: invalid cron expression: unknown time zone "Mars/Base"`},
		{"no prompt", sched(strings.Replace(okSched, `prompt = "p"`, `prompt = "  "`, 1)), `schedules[0].prompt: is required`},
		{"thread without continue", sched(okSched + "thread = \"T1\"\n"), `schedules[0].thread: names a thread to continue: set continue = true`},
		{"catch_up over seen window", sched(okSched + "catch_up = \"25h\"\n"), `schedules[0].catch_up: 25h0m0s is longer than state.seen_window (24h0m0s)`},
		{"negative catch_up", sched(okSched + "catch_up = \"-1m\"\n"), `schedules[0].catch_up: must be 0 or more`},
		{"overlap", sched(okSched + "overlap = \"queue\"\n"), `schedules[0].overlap: "queue" is not skip or wait`},
		{"unknown schedule key", sched(okSched + "crom = \"x\"\n"), `schedules[0].crom: unknown key (did you mean schedules[0].cron?)`},
		{"remote webhooks", strings.Replace(hook(okHook), `addr = "127.0.0.1:9465"`, `addr = "0.0.0.0:9465"`, 1),
			`webhooks.addr: "0.0.0.0:9465" can be reached from other hosts`},
		{"hook name", hook(strings.Replace(okHook, `"h"`, `"a/b"`, 1)), `webhooks.hooks[0].name: "a/b" is not a name`},
		{"hook secret", hook(strings.Replace(okHook, `secret = "0123456789abcdef"`, `secret = ""`, 1)), `webhooks.hooks[0].secret: is required`},
		{"hook template", hook(strings.Replace(okHook, `"{{.a}}"`, `"{{.a"`, 1)), `webhooks.hooks[0].template: template: h:1: unclosed action`},
		{"hook filter", hook(okHook + "filter = \"{{nope .a}}\"\n"), `webhooks.hooks[0].filter: template: h filter:1: function "nope" not defined`},
		{"hook no prompt", hook(strings.Replace(okHook, `prompt = "p"`, `prompt = ""`, 1)), `webhooks.hooks[0].prompt: is required`},
		{"hook unrouted", hook(strings.Replace(okHook, `"C1"`, `"C9"`, 1)), `webhooks.hooks[0].channel: no [[bindings]] entry routes slack/C9`},
		{"hook unknown key", hook(okHook + "secert = \"x\"\n"), `webhooks.hooks[0].secert: unknown key (did you mean webhooks.hooks[0].secret?)`},
		{"hook events", hook(okHook + "events = [\"workflow_run\"]\n"), `webhooks.hooks[0].events: is no longer taken: GitHub does not sign X-GitHub-Event`},
		{"hook sender", hook(okHook + "sender = \"gitlab\"\n"), `webhooks.hooks[0].sender: "gitlab" is not github or generic`},
		{"hook secret shared", hook(okHook + "[[webhooks.hooks]]\n" + strings.Replace(okHook, `"h"`, `"h2"`, 1)),
			`webhooks.hooks[1].secret: is the secret of webhooks.hooks[0]`},
		{"turn reserve", unattendedBase + "[spend]\nturn_reserve_usd = 0\n", `spend.turn_reserve_usd: must be more than 0`},
		{"max body", unattendedBase + "[webhooks]\nmax_body = \"64MiB\"\n", `webhooks.max_body: must be between 1 byte and 32MiB`},
		{"webhook addr", unattendedBase + "[webhooks]\naddr = \"nohost\"\n", `webhooks.addr: "nohost" is not host:port`},
		{"spend zone", unattendedBase + "[spend]\ntimezone = \"Nowhere/City\"\n", `spend.timezone: unknown time zone "Nowhere/City"`},
		{"negative cap", strings.Replace(unattendedBase, `channel = "C1"`, "channel = \"C1\"\ncap_daily_usd = -5", 1), `bindings[0].cap_daily_usd: must be 0 (no cap) or a positive amount`},
		{"cap not a number", strings.Replace(unattendedBase, `channel = "C1"`, "channel = \"C1\"\ncap_daily_usd = \"lots\"", 1), `bindings[0].cap_daily_usd: "lots" is not an amount in USD`},
		{"worktree without git", strings.Replace(unattendedBase, `channel = "C1"`, "channel = \"C1\"\nworktree = true", 1), `bindings[0].worktree:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := load(writeConfig(t, tt.text), envMap(nil))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestUnattendedValues(t *testing.T) {
	t.Parallel()
	text := strings.Replace(unattendedBase, `channel = "C1"`, "channel = \"C1\"\ncap_daily_usd = 20\ncap_monthly_usd = 150.5\ncap_user_daily_usd = \"$2.50\"", 1) +
		"[webhooks]\naddr = \"0.0.0.0:9465\"\nallow_remote = true\n"
	cfg, err := load(writeConfig(t, text), envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Bindings[0]
	if b.CapDailyUSD != 20 || b.CapMonthlyUSD != 150.5 || b.CapUserDailyUSD != 2.5 || b.CapUserMonthlyUSD != 0 {
		t.Errorf("caps %+v", b)
	}
	want := "webhooks.addr is set but no [[webhooks.hooks]] entry exists: every request gets a 404"
	if len(cfg.Warnings) != 1 || cfg.Warnings[0] != want {
		t.Errorf("warnings %q", cfg.Warnings)
	}
	if !strings.Contains(cfg.String(), "cap_user_daily_usd = 2.50\n") {
		t.Errorf("String() lacks the cap:\n%s", cfg.String())
	}

	short := unattendedBase + "[[webhooks.hooks]]\nname = \"h\"\nsecret = \"short\"\nplatform = \"slack\"\nchannel = \"C1\"\nprompt = \"p\"\ntemplate = \"{{.a}}\"\n"
	cfg, err = load(writeConfig(t, short), envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Warnings, "\n"); !strings.Contains(got, "webhooks.hooks[0].secret is shorter than 16 characters") ||
		!strings.Contains(got, "nothing listens for them") {
		t.Errorf("warnings %q", cfg.Warnings)
	}
}

func TestWorktreeNeedsARepository(t *testing.T) {
	t.Parallel()
	testenv.NeedGit(t)
	path := writeConfig(t, strings.Replace(unattendedBase, `channel = "C1"`, "channel = \"C1\"\nworktree = true", 1))
	ws := filepath.Join(filepath.Dir(path), "ws")
	if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	cfg, err := load(path, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Bindings[0].Worktree {
		t.Error("worktree not set")
	}
	if err := os.RemoveAll(filepath.Join(ws, ".git")); err != nil {
		t.Fatal(err)
	}
	if _, err := load(path, envMap(nil)); err == nil || !strings.Contains(err.Error(), "is not the top folder of a git repository") {
		t.Errorf("without .git: %v", err)
	}
}

// TestUnattendedChangesNeedARestart: a reload reports edits of the new
// sections as restart-only (nothing applies them live yet), by key only.
func TestUnattendedChangesNeedARestart(t *testing.T) {
	t.Parallel()
	env := envMap(map[string]string{"HOOK_SECRET": "0123456789abcdef-secret"})
	path := writeConfig(t, fullUnattended)
	old, err := load(path, env)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(strings.Replace(strings.Replace(fullUnattended, `cron = "30 2 * * *"`, `cron = "45 2 * * *"`, 1),
		`timezone = "Europe/Paris"`, `timezone = "UTC"`, 1), `max_body = "2MiB"`, `max_body = "3MiB"`, 1)
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	cur, err := load(path, env)
	if err != nil {
		t.Fatal(err)
	}
	c := Diff(old, cur)
	if got := strings.Join(c.Restart, ","); got != "schedules,webhooks.max_body,spend.timezone" {
		t.Errorf("Restart = %q", got)
	}
	if c.Live() {
		t.Errorf("live changes reported: %+v", c)
	}
}

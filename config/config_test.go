package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/workspace"
)

// minimal is the smallest valid config; tests append to or replace it.
const minimal = `
[[platforms]]
name = "local"
type = "local"

[[bindings]]
platform = "local"
workspace = "ws"
allow_users = ["*"]
`

// writeConfig writes text as config.toml in a fresh folder that also holds
// a workspace folder "ws" and a file "afile", and returns the config path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "afile"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, minimal)
	cfg, err := load(path, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Path = path
	want.State.Dir = filepath.Join(home, ".cc-connect")
	want.Audit.Path = filepath.Join(home, ".cc-connect", "audit", "audit.jsonl")
	want.Platforms = []Platform{{Name: "local", Type: "local"}}
	want.Bindings = []Binding{{
		Platform:   "local",
		Channel:    "*",
		Workspace:  workspace.Normalize(filepath.Join(filepath.Dir(path), "ws"), nil),
		AllowUsers: []string{"*"},
	}}
	if !reflect.DeepEqual(*cfg, want) {
		t.Errorf("loaded config differs from defaults:\n got %#v\nwant %#v", *cfg, want)
	}
	if cfg.Agent.IdleTimeout.D() != 30*time.Minute || cfg.Agent.QueueLimit != 20 || cfg.Agent.ContextWindow != 200000 || cfg.Agent.Prewarm != 1 {
		t.Errorf("agent defaults: %+v", cfg.Agent)
	}
}

func TestLoadFullConfig(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `
[state]
dir = "state"
seen_window = "1h"
[log]
level = "debug"
format = "json"
[files]
artifact_threshold = 4096
artifact_quota = "1MiB"
attachment_max_size = "2 MB"
[agent]
command = "/opt/claude/bin/claude"
args = ["--allowedTools", "Bash(go test:*)"]
model = "sonnet"
permission_mode = "acceptEdits"
append_system_prompt = "Be brief."
idle_timeout = "1h30m"
permission_timeout = "90s"
context_window = 1000000
self_report = false
max_processes = 0
max_processes_per_workspace = 2
prewarm = 0
queue_limit = 5
shutdown_grace = "10s"
close_grace = "2s"
allowed_modes = ["default", "bypassPermissions"]
shell_timeout = "30s"

[[platforms]]
name = "slack-main"
type = "slack"
bot_token = "xoxb-1"
app_token = "xapp-1"
api_url = "http://127.0.0.1:9000/api/"
edits_per_minute = 20
edit_burst = 1
edit_interval = "2s"
reconnect_min = "500ms"
reconnect_max = "30s"

[[platforms]]
name = "dc"
type = "discord"
token = "abc"
thread_per_message = true

[[platforms]]
name = "tg"
type = "telegram"
token = "123:abc"

[[bindings]]
platform = "slack-main"
channel = "C123"
workspace = "ws/"
allow_users = ["U1", "U2"]
admins = ["U1"]
approvers = ["U2"]
require_mention = false
allow_shell = true

[[bindings]]
platform = "dc"
workspace = "ws"
allow_users = ["*"]

[[bindings]]
platform = "tg"
channel = "-100"
workspace = "ws"
allow_users = ["*"]
`)
	cfg, err := load(path, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	if got, want := cfg.State.Dir, filepath.Join(dir, "state"); got != want {
		t.Errorf("state.dir = %q, want %q", got, want)
	}
	if cfg.State.SeenWindow.D() != time.Hour {
		t.Errorf("state.seen_window = %s", cfg.State.SeenWindow)
	}
	if f := cfg.Files; f.ArtifactThreshold != 4096 || f.ArtifactQuota != 1<<20 || f.AttachmentMaxSize != 2_000_000 {
		t.Errorf("files = %+v", f)
	}
	if !reflect.DeepEqual(cfg.Agent.AllowedModes, []string{"default", "bypassPermissions"}) || cfg.Agent.ShellTimeout.D() != 30*time.Second {
		t.Errorf("allowed_modes %q, shell_timeout %s", cfg.Agent.AllowedModes, cfg.Agent.ShellTimeout)
	}
	if !cfg.Bindings[0].AllowShell || cfg.Bindings[1].AllowShell {
		t.Errorf("allow_shell: %t, %t", cfg.Bindings[0].AllowShell, cfg.Bindings[1].AllowShell)
	}
	if cfg.Log.SlogLevel().String() != "DEBUG" || cfg.Log.Format != "json" {
		t.Errorf("log = %+v", cfg.Log)
	}
	a := cfg.Agent
	if a.IdleTimeout.D() != 90*time.Minute || a.PermissionTimeout.D() != 90*time.Second ||
		a.ShutdownGrace.D() != 10*time.Second || a.CloseGrace.D() != 2*time.Second {
		t.Errorf("durations: %+v", a)
	}
	if a.ContextWindow != 1000000 || a.SelfReport || a.MaxProcesses != 0 || a.MaxProcessesPerWorkspace != 2 || a.QueueLimit != 5 || a.Prewarm != 0 {
		t.Errorf("numbers: %+v", a)
	}
	if a.Command != "/opt/claude/bin/claude" || a.Model != "sonnet" || a.PermissionMode != "acceptEdits" ||
		a.AppendSystemPrompt != "Be brief." || a.CloseGrace.D() != 2*time.Second ||
		!reflect.DeepEqual(a.Args, []string{"--allowedTools", "Bash(go test:*)"}) {
		t.Errorf("agent = %+v", a)
	}
	if p := cfg.Platforms[0]; p.BotToken.Reveal() != "xoxb-1" || p.AppToken.Reveal() != "xapp-1" || p.APIURL != "http://127.0.0.1:9000/api/" {
		t.Errorf("slack platform = %#v", p)
	}
	if p := cfg.Platforms[0]; p.EditsPerMinute != 20 || p.EditBurst != 1 || p.EditInterval.D() != 2*time.Second ||
		p.ReconnectMin.D() != 500*time.Millisecond || p.ReconnectMax.D() != 30*time.Second {
		t.Errorf("slack pacing = %d %d %s %s %s", p.EditsPerMinute, p.EditBurst, p.EditInterval, p.ReconnectMin, p.ReconnectMax)
	}
	if !cfg.Platforms[1].ThreadPerMessage {
		t.Error("discord thread_per_message not set")
	}
	b := cfg.Bindings[0]
	ws := workspace.Normalize(filepath.Join(dir, "ws"), nil)
	if b.Workspace != ws || b.Channel != "C123" || b.RequireMention == nil || *b.RequireMention ||
		!reflect.DeepEqual(b.AllowUsers, []string{"U1", "U2"}) || !reflect.DeepEqual(b.Admins, []string{"U1"}) ||
		!reflect.DeepEqual(b.Approvers, []string{"U2"}) {
		t.Errorf("bindings[0] = %+v", b)
	}
	if cfg.Bindings[1].Channel != "*" || cfg.Bindings[1].RequireMention != nil || cfg.Bindings[1].Approvers != nil {
		t.Errorf("bindings[1] defaults = %+v", cfg.Bindings[1])
	}
	// The file sets three things worth a warning, and nothing else.
	if len(cfg.Warnings) != 3 || !strings.Contains(cfg.Warnings[0], "files.attachment_max_size (2000000B) is larger than files.artifact_quota (1MiB)") ||
		!strings.Contains(cfg.Warnings[1], `agent.allowed_modes[1] = "bypassPermissions"`) ||
		!strings.Contains(cfg.Warnings[2], `bindings[1] (platform "dc"): channel = "*" with allow_users = ["*"]`) {
		t.Errorf("warnings = %q", cfg.Warnings)
	}
}

// TestLoadErrors feeds broken configs; every expected fragment (usually
// "key: problem") must appear in the error, and with several problems all
// of them are reported.
func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		env  map[string]string
		want []string
	}{
		{"bad duration", minimal + "[agent]\nidle_timeout = \"3x\"\n",
			nil, []string{`agent.idle_timeout: "3x" is not a duration`}},
		{"zero duration", minimal + "[agent]\npermission_timeout = \"0s\"\n",
			nil, []string{"agent.permission_timeout: must be greater than zero"}},
		{"negative duration", minimal + "[agent]\nshutdown_grace = \"-1s\"\n",
			nil, []string{"agent.shutdown_grace: must be greater than zero"}},
		{"duration as number", minimal + "[agent]\nidle_timeout = 30\n",
			nil, []string{"agent.idle_timeout: expected a duration string"}},
		{"wrong type", minimal + "[agent]\nmax_processes = \"8\"\n",
			nil, []string{`agent.max_processes: expected an integer, got a string ("8")`}},
		{"numeric id", minimal + "[[bindings]]\nplatform = \"local\"\nchannel = -100123\nworkspace = \"ws\"\n",
			nil, []string{`bindings[1].channel: expected a string, got an integer: write ids in quotes ("-100123")`}},
		{"numeric user id", minimal + "[[bindings]]\nplatform = \"local\"\nchannel = \"local\"\nworkspace = \"ws\"\nallow_users = [42]\n",
			nil, []string{`bindings[1].allow_users[0]: expected a string, got an integer: write ids in quotes ("42")`}},
		{"bool type", minimal + "[agent]\nself_report = \"yes\"\n",
			nil, []string{"agent.self_report: expected true or false"}},
		{"negative cap", minimal + "[agent]\nmax_processes = -1\nmax_processes_per_workspace = -2\nqueue_limit = 0\ncontext_window = 0\nprewarm = -1\n",
			nil, []string{"agent.max_processes: must be 0 (unlimited) or more", "agent.max_processes_per_workspace: must be 0",
				"agent.queue_limit: must be at least 1", "agent.context_window: must be greater than zero",
				"agent.prewarm: must be 0 (no spare processes) or more"}},
		{"bad size", minimal + "[files]\nartifact_quota = \"64 megs\"\nattachment_max_size = 0\nartifact_threshold = true\n",
			nil, []string{`files.artifact_quota: "64 megs" is not a size`, "files.attachment_max_size: must be greater than zero",
				"files.artifact_threshold: expected a size"}},
		{"huge threshold", minimal + "[files]\nartifact_threshold = \"4GiB\"\n",
			nil, []string{"files.artifact_threshold: 4GiB is too large"}},
		{"seen window", minimal + "[state]\nseen_window = \"0s\"\n",
			nil, []string{"state.seen_window: must be greater than zero"}},
		{"allowed modes", minimal + "[agent]\nallowed_modes = [\"default\", \"yolo\", 3]\nshell_timeout = \"-1m\"\n",
			nil, []string{`agent.allowed_modes[1]: "yolo" is not one of`, "agent.allowed_modes[2]: expected a string", "agent.shell_timeout: must be greater than zero"}},
		{"no allowed modes", minimal + "[agent]\nallowed_modes = []\n",
			nil, []string{"agent.allowed_modes: must list at least one mode"}},
		{"log level and format", minimal + "[log]\nlevel = \"loud\"\nformat = \"xml\"\n",
			nil, []string{`log.level: "loud" is not one of debug, info, warn, error`, `log.format: "xml" is not one of text, json`}},
		{"permission mode", minimal + "[agent]\npermission_mode = \"yolo\"\n",
			nil, []string{`agent.permission_mode: "yolo" is not one of`}},
		{"empty command", minimal + "[agent]\ncommand = \"\"\n",
			nil, []string{"agent.command: must not be empty"}},
		{"bad env name", minimal + "[agent]\nenv = { \"A-B\" = \"x\" }\n",
			nil, []string{`agent.env: "A-B" is not a valid environment variable name`}},
		{"unknown top-level key", minimal + "[agnet]\n",
			nil, []string{"agnet: unknown key (did you mean agent?)"}},
		{"unknown nested key", minimal + "[agent]\nidle_timout = \"1m\"\n",
			nil, []string{"agent.idle_timout: unknown key (did you mean agent.idle_timeout?)"}},
		{"unknown key in array entry", minimal + "[[bindings]]\nplatform = \"local\"\nchannel = \"x\"\nworkspace = \"ws\"\nallow_user = [\"a\"]\n",
			nil, []string{"bindings[1].allow_user: unknown key (did you mean bindings[1].allow_users?)"}},
		{"upper-case key", minimal + "[agent]\nCommand = \"claude\"\n",
			nil, []string{"agent.Command: unknown key (did you mean agent.command?)"}},
		{"unknown key without suggestion", minimal + "[log]\nfrobnicate = 1\n",
			nil, []string{"log.frobnicate: unknown key"}},
		{"no platforms or bindings", "[log]\nlevel = \"info\"\n",
			nil, []string{"platforms: at least one [[platforms]] entry is required", "bindings: at least one [[bindings]] entry is required"}},
		{"duplicate platform name", minimal + "[[platforms]]\nname = \"local\"\ntype = \"discord\"\ntoken = \"t\"\n",
			nil, []string{`platforms[1].name: "local" is already used by platforms[0]`}},
		{"unknown platform type", minimal + "[[platforms]]\nname = \"irc\"\ntype = \"irc\"\n",
			nil, []string{`platforms[1].type: "irc" is not one of slack, discord, telegram, local`}},
		{"missing platform name", minimal + "[[platforms]]\ntype = \"discord\"\ntoken = \"t\"\n",
			nil, []string{"platforms[1].name: is required"}},
		{"second local", minimal + "[[platforms]]\nname = \"tty2\"\ntype = \"local\"\n",
			nil, []string{"platforms[1].type: only one local platform can read the terminal"}},
		{"slack tokens missing", minimal + "[[platforms]]\nname = \"s\"\ntype = \"slack\"\n",
			nil, []string{"platforms[1].bot_token: is required", "platforms[1].app_token: is required"}},
		{"slack tokens swapped", minimal + "[[platforms]]\nname = \"s\"\ntype = \"slack\"\nbot_token = \"xapp-1\"\napp_token = \"xoxb-1\"\n",
			nil, []string{"platforms[1].bot_token: must start with xoxb-", "platforms[1].app_token: must start with xapp-"}},
		{"slack pacing out of range", minimal + "[[platforms]]\nname = \"s\"\ntype = \"slack\"\nbot_token = \"xoxb-1\"\napp_token = \"xapp-1\"\n" +
			"edits_per_minute = 601\nedit_burst = -1\nedit_interval = \"-1s\"\nreconnect_min = \"10ms\"\n",
			nil, []string{"platforms[1].edits_per_minute: 601 is not between 1 and 600", "platforms[1].edit_burst: -1 is negative",
				"platforms[1].edit_interval: -1s is negative", "platforms[1].reconnect_min: 10ms is less than 100ms"}},
		{"slack reconnect_max below reconnect_min", minimal + "[[platforms]]\nname = \"s\"\ntype = \"slack\"\nbot_token = \"xoxb-1\"\napp_token = \"xapp-1\"\n" +
			"reconnect_min = \"30s\"\nreconnect_max = \"10s\"\n",
			nil, []string{"platforms[1].reconnect_max: 10s is less than reconnect_min (30s)"}},
		{"slack reconnect_min above the default maximum", minimal + "[[platforms]]\nname = \"s\"\ntype = \"slack\"\nbot_token = \"xoxb-1\"\napp_token = \"xapp-1\"\n" +
			"reconnect_min = \"5m\"\n",
			nil, []string{"platforms[1].reconnect_min: 5m0s is more than reconnect_max (unset: 2m0s)"}},
		{"slack pacing on discord", minimal + "[[platforms]]\nname = \"d\"\ntype = \"discord\"\ntoken = \"t\"\nedit_burst = 2\n",
			nil, []string{"platforms[1].edit_burst: is not used by type discord"}},
		{"discord token missing", minimal + "[[platforms]]\nname = \"d\"\ntype = \"discord\"\n",
			nil, []string{"platforms[1].token: is required"}},
		{"telegram token shape", minimal + "[[platforms]]\nname = \"t\"\ntype = \"telegram\"\ntoken = \"nocolon\"\n",
			nil, []string{"platforms[1].token: does not look like a Telegram bot token"}},
		{"key for another type", minimal + "[[platforms]]\nname = \"d\"\ntype = \"discord\"\ntoken = \"t\"\nbot_token = \"xoxb-1\"\n",
			nil, []string{"platforms[1].bot_token: is not used by type discord"}},
		{"api_url on local", "[[platforms]]\nname = \"local\"\ntype = \"local\"\napi_url = \"http://x\"\n[[bindings]]\nplatform = \"local\"\nworkspace = \"ws\"\n",
			nil, []string{"platforms[0].api_url: is not used by type local"}},
		{"api_url not http", minimal + "[[platforms]]\nname = \"d\"\ntype = \"discord\"\ntoken = \"t\"\napi_url = \"ftp://x\"\n",
			nil, []string{`platforms[1].api_url: "ftp://x" is not an http(s) URL`}},
		{"api_url no host", minimal + "[[platforms]]\nname = \"d\"\ntype = \"discord\"\ntoken = \"t\"\napi_url = \"localhost:8080\"\n",
			nil, []string{"platforms[1].api_url:", "is not an http(s) URL"}},
		{"binding to unknown platform", minimal + "[[bindings]]\nplatform = \"slack\"\nworkspace = \"ws\"\n",
			nil, []string{`bindings[1].platform: "slack" is not the name of any [[platforms]] entry`}},
		{"binding without platform", minimal + "[[bindings]]\nworkspace = \"ws\"\n",
			nil, []string{"bindings[1].platform: is required"}},
		{"workspace missing", minimal + "[[bindings]]\nplatform = \"local\"\nchannel = \"local\"\nworkspace = \"/nonexistent/srv/app\"\n",
			nil, []string{"bindings[1].workspace: /nonexistent/srv/app does not exist"}},
		{"workspace is a file", minimal + "[[bindings]]\nplatform = \"local\"\nchannel = \"local\"\nworkspace = \"afile\"\n",
			nil, []string{"bindings[1].workspace:", "afile is not a folder"}},
		{"workspace empty", minimal + "[[bindings]]\nplatform = \"local\"\nchannel = \"local\"\n",
			nil, []string{"bindings[1].workspace: is required"}},
		{"duplicate binding", minimal + "[[bindings]]\nplatform = \"local\"\nworkspace = \"ws\"\n",
			nil, []string{`bindings[1].channel: "*" on platform "local" is already bound by bindings[0]`}},
		{"local channel that never matches", minimal + "[[bindings]]\nplatform = \"local\"\nchannel = \"general\"\nworkspace = \"ws\"\n",
			nil, []string{`bindings[1].channel: "general" never matches: the local platform's only channel is "local"`}},
		{"empty channel", minimal + "[[bindings]]\nplatform = \"local\"\nchannel = \"\"\nworkspace = \"ws\"\n",
			nil, []string{"bindings[1].channel: must not be empty"}},
		{"empty user id", minimal + "[[bindings]]\nplatform = \"local\"\nchannel = \"local\"\nworkspace = \"ws\"\nallow_users = [\"\"]\nadmins = [\" \"]\n",
			nil, []string{"bindings[1].allow_users[0]: must not be empty", "bindings[1].admins[0]: must not be empty"}},
		{"empty approvers", minimal + "[[bindings]]\nplatform = \"local\"\nchannel = \"local\"\nworkspace = \"ws\"\napprovers = []\n",
			nil, []string{"bindings[1].approvers: is empty, so nobody could answer a permission prompt here"}},
		{"empty approver id", minimal + "[[bindings]]\nplatform = \"local\"\nchannel = \"local\"\nworkspace = \"ws\"\napprovers = [\"\"]\n",
			nil, []string{"bindings[1].approvers[0]: must not be empty"}},
		{"require_mention type", minimal + "[[bindings]]\nplatform = \"local\"\nchannel = \"local\"\nworkspace = \"ws\"\nrequire_mention = \"yes\"\n",
			nil, []string{"bindings[1].require_mention: expected true or false"}},
		{"bindings not an array of tables", "bindings = \"x\"\n[[platforms]]\nname = \"local\"\ntype = \"local\"\n",
			nil, []string{"bindings: expected an array, got a string"}},
		{"unset variable", minimal + "[[platforms]]\nname = \"s\"\ntype = \"slack\"\nbot_token = \"${SLACK_BOT_TOKEN}\"\napp_token = \"xapp-1\"\n",
			nil, []string{"platforms[1].bot_token: environment variable SLACK_BOT_TOKEN is not set"}},
		{"unset variable in env table", minimal + "[agent]\nenv = { ANTHROPIC_API_KEY = \"${KEY}\" }\n",
			nil, []string{"agent.env.ANTHROPIC_API_KEY: environment variable KEY is not set"}},
		{"unset variable in list", minimal + "[agent]\nargs = [\"--x\", \"${NOPE}\"]\n",
			nil, []string{"agent.args[1]: environment variable NOPE is not set"}},
		{"shell-style variable", minimal + "[agent]\nmodel = \"$MODEL\"\n",
			nil, []string{`agent.model: a "$" must start ${NAME}`}},
		{"variable in a duration", minimal + "[agent]\nidle_timeout = \"${IDLE}\"\n",
			map[string]string{"IDLE": "forever"}, []string{`agent.idle_timeout: "forever" is not a duration`}},
		{"syntax error has a position", minimal + "[agent\n",
			nil, []string{"config.toml:10:"}},
		{"many problems at once", minimal + "[agent]\nidle_timeout = \"3x\"\nqueue_limit = 0\n[log]\nlevel = \"loud\"\n[[bindings]]\nplatform = \"nope\"\nworkspace = \"missing\"\n",
			nil, []string{"agent.idle_timeout", "agent.queue_limit", "log.level", "bindings[1].platform", "bindings[1].workspace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeConfig(t, tt.text)
			cfg, err := load(path, envMap(tt.env))
			if err == nil {
				t.Fatalf("loaded without error: %+v", cfg)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestLoadReportsOnlyOneErrorPerKey(t *testing.T) {
	t.Parallel()
	// A workspace whose variable is unset must not also be reported as
	// "is required": the decode error already names the key.
	path := writeConfig(t, minimal+"[[bindings]]\nplatform = \"local\"\nchannel = \"local\"\nworkspace = \"${WS}\"\n")
	_, err := load(path, envMap(nil))
	if err == nil {
		t.Fatal("loaded without error")
	}
	if n := strings.Count(err.Error(), "bindings[1].workspace"); n != 1 {
		t.Errorf("bindings[1].workspace reported %d times:\n%v", n, err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "config.toml"))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

func TestKnownKeys(t *testing.T) {
	t.Parallel()
	keys := KnownKeys()
	for _, k := range []string{"state.dir", "log.level", "agent.env", "agent.idle_timeout", "platforms[].bot_token", "bindings[].require_mention"} {
		if !containsString(keys, k) {
			t.Errorf("KnownKeys() lacks %s: %v", k, keys)
		}
	}
}

func containsString(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"4096", 4096, true},
		{"4096B", 4096, true},
		{"16KiB", 16 << 10, true},
		{"16 KiB", 16 << 10, true},
		{"10MB", 10_000_000, true},
		{"64MiB", 64 << 20, true},
		{"1GB", 1_000_000_000, true},
		{"2GiB", 2 << 30, true},
		{"", 0, false},
		{"MiB", 0, false},
		{"1.5MiB", 0, false},
		{"10 megs", 0, false},
		{"-1", 0, false},
		{"99999999999GiB", 0, false},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("parseSize(%q) = %d, %v; want %d, ok %t", tt.in, got, err, tt.want, tt.ok)
		}
	}
	for size, want := range map[Size]string{16 << 10: "16KiB", 64 << 20: "64MiB", 1 << 30: "1GiB", 1000: "1000B", 0: "0B"} {
		if got := size.String(); got != want {
			t.Errorf("Size(%d).String() = %q, want %q", int64(size), got, want)
		}
	}
}

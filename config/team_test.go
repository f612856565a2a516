package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

const teamPlatforms = `
[agent]
model = "sonnet"
args = ["--verbose-tools"]
env = { Shared = "global", KEEP = "1" }
append_system_prompt = "global prompt"

[[platforms]]
name = "local"
type = "local"

[[platforms]]
name = "slack"
type = "slack"
bot_token = "${SLACK_BOT_TOKEN}"
app_token = "xapp-1"
`

func TestBindingOverrides(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, teamPlatforms+`
[[bindings]]
platform = "slack"
channel = "C0QUESTIONS"
workspace = "ws"
allow_users = ["*"]
model = "haiku"
permission_mode = "plan"
allowed_modes = ["plan"]
append_system_prompt = ""
args = ["--max-turns", "60"]
env = { Shared = "binding", MixedCase_Var = "x" }
max_processes_per_workspace = 2
attachment_max_size = "1MiB"
send_file_max_size = "50MiB"
sender_header = false
notify_mention = false
checkpoints = false

[[bindings]]
platform = "slack"
channel = "C0CHANGES"
workspace = "ws"
allow_users = ["*"]
`)
	cfg, err := load(path, envMap(map[string]string{"SLACK_BOT_TOKEN": "xoxb-1"}))
	if err != nil {
		t.Fatal(err)
	}
	q, c := cfg.Bindings[0], cfg.Bindings[1]
	a := cfg.AgentFor(q)
	if a.Model != "haiku" || a.PermissionMode != "plan" || !reflect.DeepEqual(a.AllowedModes, []string{"plan"}) ||
		a.AppendSystemPrompt != "" || a.MaxProcessesPerWorkspace != 2 {
		t.Errorf("overridden agent %+v", a)
	}
	if want := []string{"--verbose-tools", "--max-turns", "60"}; !reflect.DeepEqual(a.Args, want) {
		t.Errorf("args %q, want %q", a.Args, want)
	}
	if a.Env["Shared"].Reveal() != "binding" || a.Env["KEEP"].Reveal() != "1" || a.Env["MixedCase_Var"].Reveal() != "x" {
		t.Errorf("env %v: want the binding's entries over agent.env, keys in their case", a.Env)
	}
	if cfg.Agent.Env["Shared"].Reveal() != "global" || len(cfg.Agent.Args) != 1 {
		t.Errorf("the override changed [agent] itself: %v %v", cfg.Agent.Env, cfg.Agent.Args)
	}
	f := cfg.FilesFor(q)
	if f.AttachmentMaxSize != 1<<20 || f.SendFileMaxSize != 50<<20 || f.ArtifactQuota != cfg.Files.ArtifactQuota {
		t.Errorf("files %+v", f)
	}
	if specs := cfg.BindingSpecs(); specs[0].CheckpointsOn() || !specs[1].CheckpointsOn() {
		t.Error("checkpoints: want off where set false, on by default")
	}
	if q.SenderHeaderOn(false) || q.NotifyMentionOn() {
		t.Error("the binding's switches are off, but read as on")
	}
	if got, want := q.Overrides(), []string{"model", "permission_mode", "allowed_modes", "append_system_prompt", "args", "env",
		"max_processes_per_workspace", "attachment_max_size", "send_file_max_size"}; !reflect.DeepEqual(got, want) {
		t.Errorf("overrides %v, want %v", got, want)
	}

	// The other binding of the same workspace keeps the global setup.
	if a := cfg.AgentFor(c); a.Model != "sonnet" || a.AppendSystemPrompt != "global prompt" || len(a.Args) != 1 || a.Env["Shared"].Reveal() != "global" {
		t.Errorf("binding without overrides got %+v", a)
	}
	if cfg.FilesFor(c) != cfg.Files || len(c.Overrides()) != 0 {
		t.Errorf("files %+v, overrides %v", cfg.FilesFor(c), c.Overrides())
	}
	if !c.SenderHeaderOn(false) || c.SenderHeaderOn(true) || !c.NotifyMentionOn() {
		t.Error("default switches: want the header in channels only and the mention on")
	}

	// check prints the overrides, the env values redacted.
	out := cfg.String()
	for _, want := range []string{`model = "haiku"`, `permission_mode = "plan"`, `allowed_modes = ["plan"]`, `append_system_prompt = ""`,
		`args = ["--max-turns", "60"]`, `env = { "MixedCase_Var" = "[redacted]", "Shared" = "[redacted]" }`,
		`max_processes_per_workspace = 2`, `send_file_max_size = "50MiB"`, `sender_header = false`, `notify_mention = false`,
		`checkpoints = false`, "[chat]\nnotify_after = \"2m0s\""} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "binding\"") {
		t.Errorf("check output shows an env value:\n%s", out)
	}
}

func TestChatDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := load(writeConfig(t, minimal), envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Chat{NotifyAfter: Duration(2 * time.Minute), ThreadContextMessages: 50, ThreadContextBytes: 16 << 10}
	if cfg.Chat != want || cfg.Files.SendFileMaxSize != 20<<20 {
		t.Errorf("chat %+v, send_file_max_size %s", cfg.Chat, cfg.Files.SendFileMaxSize)
	}
}

func TestTeamKeyErrors(t *testing.T) {
	t.Parallel()
	binding := "\n[[bindings]]\nplatform = \"slack\"\nchannel = \"C1\"\nworkspace = \"ws\"\nallow_users = [\"*\"]\n"
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"permission mode", binding + "permission_mode = \"yolo\"\n", []string{`bindings[0].permission_mode: "yolo" is not one of`}},
		{"allowed modes", binding + "allowed_modes = [\"plan\", \"nope\"]\n", []string{`bindings[0].allowed_modes[1]: "nope" is not one of`}},
		{"no allowed modes", binding + "allowed_modes = []\n", []string{"bindings[0].allowed_modes: must list at least one mode"}},
		{"model type", binding + "model = 4\n", []string{"bindings[0].model: expected a string"}},
		{"model spaces", binding + "model = \" haiku\"\n", []string{`bindings[0].model: " haiku" has spaces around it`}},
		{"empty arg", binding + "args = [\"--x\", \"\"]\n", []string{"bindings[0].args[1]: must not be empty"}},
		{"env name", binding + "env = { \"BAD-NAME\" = \"1\" }\n", []string{`bindings[0].env: "BAD-NAME" is not a valid environment variable name`}},
		{"env token by name", binding + "env = { SLACK_BOT_TOKEN = \"x\" }\n",
			[]string{"bindings[0].env.SLACK_BOT_TOKEN: SLACK_BOT_TOKEN is the variable platforms[1].bot_token is read from"}},
		{"env token by reference", binding + "env = { T = \"${SLACK_BOT_TOKEN}\" }\n",
			[]string{"bindings[0].env.T: takes ${SLACK_BOT_TOKEN}"}},
		{"env token by value", binding + "env = { T = \"xoxb-1\" }\n",
			[]string{"bindings[0].env.T: holds the value of platforms[1].bot_token"}},
		{"processes", binding + "max_processes_per_workspace = -1\n", []string{"bindings[0].max_processes_per_workspace: must be 0 (unlimited) or more"}},
		{"zero size", binding + "attachment_max_size = 0\n", []string{"bindings[0].attachment_max_size: must be greater than zero"}},
		{"huge size", binding + "send_file_max_size = \"2GiB\"\n", []string{"bindings[0].send_file_max_size: 2GiB is too large"}},
		{"size type", binding + "artifact_quota = true\n", []string{"bindings[0].artifact_quota: expected a size"}},
		{"switch type", binding + "sender_header = \"yes\"\n", []string{"bindings[0].sender_header: expected true or false"}},
		{"unknown key", binding + "modle = \"x\"\n", []string{"bindings[0].modle: unknown key (did you mean bindings[0].model?)"}},
		{"notify after", binding + "[chat]\nnotify_after = \"-1s\"\n", []string{"chat.notify_after: must be 0 (every turn) to a year"}},
		{"thread messages", binding + "[chat]\nthread_context_messages = 1001\n", []string{"chat.thread_context_messages: must be 0 (none) to 1000"}},
		{"thread bytes", binding + "[chat]\nthread_context_bytes = \"2MiB\"\n", []string{"chat.thread_context_bytes: must be more than 0 and at most 1MiB"}},
		{"send max", binding + "[files]\nsend_file_max_size = 0\n", []string{"files.send_file_max_size: must be greater than zero"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := load(writeConfig(t, teamPlatforms+tt.text), envMap(map[string]string{"SLACK_BOT_TOKEN": "xoxb-1"}))
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/workspace"
)

func TestEnvExpansion(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `
[agent]
model = "${MODEL}"
args = ["--append", "cost $$5 ${EMPTY}end"]
env = { ANTHROPIC_BASE_URL = "${BASE}/v1" }

[[platforms]]
name = "local"
type = "local"

[[platforms]]
name = "slack"
type = "slack"
bot_token = "${SLACK_BOT_TOKEN}"
app_token = "xapp-${SUFFIX}"

[[bindings]]
platform = "local"
workspace = "${WS_DIR}"
allow_users = ["${ME}"]

[[bindings]]
platform = "slack"
workspace = "ws"
allow_users = ["*"]
`)
	env := map[string]string{
		"MODEL": "sonnet", "EMPTY": "", "BASE": "http://127.0.0.1:8080",
		"SLACK_BOT_TOKEN": "xoxb-secret", "SUFFIX": "abc", "WS_DIR": "ws", "ME": "alice",
	}
	cfg, err := load(path, envMap(env))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct{ name, got, want string }{
		{"agent.model", cfg.Agent.Model, "sonnet"},
		{"agent.args[1]", cfg.Agent.Args[1], "cost $5 end"},
		{"agent.env", cfg.Agent.Env["ANTHROPIC_BASE_URL"].Reveal(), "http://127.0.0.1:8080/v1"},
		{"bot_token", cfg.Platforms[1].BotToken.Reveal(), "xoxb-secret"},
		{"app_token", cfg.Platforms[1].AppToken.Reveal(), "xapp-abc"},
		{"workspace", cfg.Bindings[0].Workspace, workspace.Normalize(filepath.Join(filepath.Dir(path), "ws"), nil)},
		{"allow_users", cfg.Bindings[0].AllowUsers[0], "alice"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
}

func TestExpandEnv(t *testing.T) {
	t.Parallel()
	lookup := envMap(map[string]string{"A": "1", "B_2": "two", "E": "", "D": "${A}"})
	tests := []struct {
		in, want, err string
	}{
		{in: "plain", want: "plain"},
		{in: "${A}", want: "1"},
		{in: "x${A}y${B_2}z", want: "x1ytwoz"},
		{in: "${E}", want: ""},
		{in: "$$", want: "$"},
		{in: "$${A}", want: "${A}"},
		{in: "$$$${A}", want: "$${A}"},
		{in: "${D}", want: "${A}"}, // values are not expanded again
		{in: "${MISSING}", err: "environment variable MISSING is not set"},
		{in: "$A", err: `a "$" must start ${NAME}`},
		{in: "end$", err: `a "$" must start ${NAME}`},
		{in: "${A", err: `"${" without a closing "}"`},
		{in: "${}", err: "${} is not a valid environment variable reference"},
		{in: "${1A}", err: "${1A} is not a valid"},
		{in: "${A-B}", err: "${A-B} is not a valid"},
	}
	for _, tt := range tests {
		got, err := expandEnv(tt.in, lookup)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("expandEnv(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("expandEnv(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// TestEnvKeysKeepCase guards against viper's lowercasing: the agent's
// environment must reach claude exactly as written.
func TestEnvKeysKeepCase(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, minimal+`
[agent]
env = { ANTHROPIC_BASE_URL = "http://127.0.0.1:1", MixedCase_Var = "m", lower = "l", "DOTTED.NAME_OK" = "x" }
`)
	_, err := load(path, envMap(nil))
	if err == nil || !strings.Contains(err.Error(), `"DOTTED.NAME_OK" is not a valid environment variable name`) {
		t.Fatalf("dotted env name: err = %v", err)
	}

	path = writeConfig(t, minimal+`
[agent]
env = { ANTHROPIC_BASE_URL = "http://127.0.0.1:1", MixedCase_Var = "m", lower = "l" }
`)
	cfg, err := load(path, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:1", "MixedCase_Var": "m", "lower": "l"}
	if got := cfg.Agent.EnvValues(); !reflect.DeepEqual(got, want) {
		t.Errorf("Agent.EnvValues() = %v, want %v", got, want)
	}

	// The [agent.env] table form too.
	path = writeConfig(t, minimal+"\n[agent.env]\nCLAUDE_CONFIG_DIR = \"/tmp/x\"\n")
	cfg, err = load(path, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Agent.EnvValues(); !reflect.DeepEqual(got, map[string]string{"CLAUDE_CONFIG_DIR": "/tmp/x"}) {
		t.Errorf("[agent.env] table: Env = %v", got)
	}
}

func TestTildeExpansion(t *testing.T) {
	// Not parallel: HOME is swapped for a temporary folder.
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.Mkdir(filepath.Join(home, "project"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := writeConfig(t, `
[state]
dir = "~/.cc-connect-state"
[[platforms]]
name = "local"
type = "local"
[[bindings]]
platform = "local"
workspace = "~/project"
allow_users = ["*"]
`)
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, ".cc-connect-state"); cfg.State.Dir != want {
		t.Errorf("state.dir = %q, want %q", cfg.State.Dir, want)
	}
	if want := workspace.Normalize(filepath.Join(home, "project"), nil); cfg.Bindings[0].Workspace != want {
		t.Errorf("workspace = %q, want %q", cfg.Bindings[0].Workspace, want)
	}
}

func TestWorkspaceSymlinkNormalized(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, minimal)
	dir := filepath.Dir(path)
	if err := os.Symlink(filepath.Join(dir, "ws"), filepath.Join(dir, "link")); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	if err := os.WriteFile(path, []byte(minimal+"[[bindings]]\nplatform = \"local\"\nchannel = \"local\"\nworkspace = \"./link/\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := load(path, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Bindings[0].Workspace != cfg.Bindings[1].Workspace {
		t.Errorf("symlinked workspace %q differs from %q", cfg.Bindings[1].Workspace, cfg.Bindings[0].Workspace)
	}
}

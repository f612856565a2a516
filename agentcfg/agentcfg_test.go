package agentcfg

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/config"
)

// load writes text as a config file beside a workspace folder "ws" and
// loads it.
func load(t *testing.T, text string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestFrom: every [agent] setting reaches the driver's options, agent.env
// revealed, and the variables platform tokens are read from are never
// passed to a child, while others are.
func TestFrom(t *testing.T) {
	t.Setenv("CCX_TEST_SLACK_BOT", "xoxb-from-env")
	t.Setenv("CCX_TEST_SLACK_APP", "xapp-from-env")
	cfg := load(t, `
[agent]
command = "/opt/claude/bin/claude"
args = ["--allowedTools", "Bash(go test:*)"]
env = { ANTHROPIC_BASE_URL = "http://127.0.0.1:1" }
model = "sonnet"
permission_mode = "acceptEdits"
append_system_prompt = "Be brief."
close_grace = "2s"

[[platforms]]
name = "s"
type = "slack"
bot_token = "${CCX_TEST_SLACK_BOT}"
app_token = "${CCX_TEST_SLACK_APP}"

[[bindings]]
platform = "s"
workspace = "ws"
allow_users = ["*"]
`)
	ac := From(cfg)
	if ac.Command != "/opt/claude/bin/claude" || ac.Model != "sonnet" || ac.PermissionMode != "acceptEdits" ||
		ac.AppendSystemPrompt != "Be brief." || ac.CloseGrace != 2*time.Second ||
		!reflect.DeepEqual(ac.Args, []string{"--allowedTools", "Bash(go test:*)"}) ||
		!reflect.DeepEqual(ac.Env, map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"}) {
		t.Errorf("From = %+v", ac)
	}
	if !ac.Secrets.Has("CCX_TEST_SLACK_BOT") || !ac.Secrets.Has("CCX_TEST_SLACK_APP") || ac.Secrets.Has("OTHER") {
		t.Errorf("secrets = %q", ac.Secrets.Names())
	}
	if !slices.Equal(ac.EnvDrop, agentproc.DefaultEnvDrop) || ac.User != nil {
		t.Errorf("env_drop %q, user %v", ac.EnvDrop, ac.User)
	}
	env := agentproc.BuildEnv([]string{"CCX_TEST_SLACK_BOT=b1", "CCX_TEST_SLACK_APP=xapp-a1", "OTHER=x", "COPY=xapp-from-env"}, ac)
	if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "CCX_TEST_SLACK_") }) || !slices.Contains(env, "OTHER=x") {
		t.Errorf("child environment = %q", env)
	}
	// A copy of a token under a name nobody marked is held back by its value.
	if slices.Contains(env, "COPY=xapp-from-env") {
		t.Errorf("a copy of the app token reached the child: %q", env)
	}
}

// TestFromAgentUser: agent.user, resolved at load, is the children's user.
func TestFromAgentUser(t *testing.T) {
	cfg := load(t, `
[agent]
user = "root"

[[platforms]]
name = "local"
type = "local"

[[bindings]]
platform = "local"
workspace = "ws"
allow_users = ["*"]
`)
	if u := From(cfg).User; u == nil || u != cfg.Agent.RunAs || u.UID != 0 {
		t.Errorf("User = %+v, want the resolved agent.user", u)
	}
}

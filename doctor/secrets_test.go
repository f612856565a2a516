package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/agentcfg"
	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// secretsConfig writes a config file (mode perm) in its own folder (mode
// dirPerm) with a Telegram token written literally and a Slack bot token
// read from the environment, and loads it.
func secretsConfig(t *testing.T, perm, dirPerm os.FileMode, agentUser string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CCX_DOCTOR_SLACK_BOT", "xoxb-SECRETENV")
	text := `
[agent]
user = "` + agentUser + `"
[[platforms]]
name = "tg"
type = "telegram"
token = "123:SECRETLITERAL"
[[platforms]]
name = "s"
type = "slack"
bot_token = "${CCX_DOCTOR_SLACK_BOT}"
app_token = "xapp-SECRETAPP"
[[bindings]]
platform = "tg"
workspace = "ws"
allow_users = ["*"]
[[bindings]]
platform = "s"
workspace = "ws"
allow_users = ["*"]
`
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(text), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, dirPerm); err != nil {
		t.Fatal(err)
	}
	// nobody must reach the folder through t.TempDir's private parent.
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func secretsCheck(t *testing.T, cfg *config.Config) Check {
	t.Helper()
	agent := agentcfg.From(cfg)
	c := checkSecrets(context.Background(), cfg, agent, agentproc.BuildEnv(os.Environ(), agent))
	for _, s := range []string{"SECRETENV", "SECRETLITERAL", "SECRETAPP"} {
		if strings.Contains(c.Detail, s) {
			t.Errorf("the check shows a token: %s", c.Detail)
		}
	}
	return c
}

// TestSecretsCheckSameUser: an agent that runs as cc-connect's own user
// reaches a token written in the config file and the environment the
// others come from; doctor says so.
func TestSecretsCheckSameUser(t *testing.T) {
	cfg := secretsConfig(t, 0o600, 0o700, "")
	c := secretsCheck(t, cfg)
	for _, want := range []string{
		"platforms[0].token, platforms[1].app_token written in " + cfg.Path,
		"CCX_DOCTOR_SLACK_BOT come from the environment",
		"agent.user",
	} {
		if c.Status != Warn || !strings.Contains(c.Detail, want) {
			t.Errorf("secrets check = %s %q, want a warning with %q", c.Status, c.Detail, want)
		}
	}
	local := config.Default()
	local.Platforms = []config.Platform{{Name: "local", Type: config.TypeLocal}}
	if c := secretsCheck(t, &local); c.Status != OK || !strings.Contains(c.Detail, "no platform tokens") {
		t.Errorf("local only: %s %q", c.Status, c.Detail)
	}
}

// TestSecretsCheckAgentUser: with agent.user, what counts is what that
// user can reach; doctor asks the kernel as that user.
func TestSecretsCheckAgentUser(t *testing.T) {
	testenv.NeedRoot(t, "checking as another user")
	tests := []struct {
		name          string
		perm, dirPerm os.FileMode
		status        Status
		detail        string
	}{
		{"private file", 0o600, 0o700, OK, "nobody (uid 65534) cannot read"},
		{"readable file with literal tokens", 0o644, 0o755, Warn, "platforms[0].token, platforms[1].app_token written in"},
		{"file in a folder the agent can write", 0o600, 0o777, Warn, "can be replaced by nobody (uid 65534)"},
		{"file the agent can write", 0o666, 0o755, Warn, "can be written by nobody (uid 65534)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := secretsConfig(t, tt.perm, tt.dirPerm, "nobody")
			c := secretsCheck(t, cfg)
			wantCheck(t, c, tt.status, tt.detail)
			if strings.Contains(c.Detail, "come from the environment") {
				t.Errorf("another user was said to reach cc-connect's environment: %s", c.Detail)
			}
		})
	}
}

func TestAgentUserCheck(t *testing.T) {
	cfg := secretsConfig(t, 0o600, 0o700, "")
	agent := agentcfg.From(cfg)
	c := checkAgentUser(context.Background(), cfg, agent, agentproc.BuildEnv(os.Environ(), agent))
	if os.Geteuid() != 0 {
		wantCheck(t, c, OK, "the user cc-connect runs as")
		return
	}
	// As root, without agent.user, chat platforms are refused, saying why;
	// with agent.allow_root they are a warning.
	wantCheck(t, c, Fail, "agent.allow_root: the agent would run as root: cc-connect runs as root and agent.user is not set, so Claude's Bash would run as root and could read every token (from /proc/<cc-connect pid>/environ")
	cfg.Agent.AllowRoot = true
	c = checkAgentUser(context.Background(), cfg, agent, agentproc.BuildEnv(os.Environ(), agent))
	wantCheck(t, c, Warn, "run as root (agent.allow_root = true) for platform tg")
	cfg.Agent.AllowRoot = false
	// nobody: the workspace is root's, and its home (/nonexistent) cannot
	// hold a Claude Code config dir; an agent.env CLAUDE_CONFIG_DIR it owns can.
	cfg = secretsConfig(t, 0o600, 0o755, "nobody")
	agent = agentcfg.From(cfg)
	c = checkAgentUser(context.Background(), cfg, agent, agentproc.BuildEnv(os.Environ(), agent))
	wantCheck(t, c, Warn, "cannot write the workspace "+cfg.Bindings[0].Workspace)
	if !strings.Contains(c.Detail, "config dir /nonexistent/.claude") {
		t.Errorf("agent user check %q does not name the missing config dir", c.Detail)
	}
	claudeDir := filepath.Join(filepath.Dir(cfg.Path), "claude")
	for _, d := range []string{cfg.Bindings[0].Workspace, claudeDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Agent.Env = map[string]config.Secret{"CLAUDE_CONFIG_DIR": config.Secret(claudeDir)}
	agent = agentcfg.From(cfg)
	c = checkAgentUser(context.Background(), cfg, agent, agentproc.BuildEnv(os.Environ(), agent))
	wantCheck(t, c, OK, "run as nobody (uid 65534), not as cc-connect (uid 0); it can write the workspaces and "+claudeDir)
}

func TestAgentEnvCheckNamesWhatIsHeldBack(t *testing.T) {
	t.Parallel()
	agent := agentproc.Config{EnvDrop: agentproc.DefaultEnvDrop, Secrets: agentproc.NewSecretVars("TG")}
	c := checkAgentEnv(agent, []string{"PATH=/bin", "TG=123:SECRET", "GITHUB_TOKEN=ghp_SECRET", "ANTHROPIC_API_KEY=sk-SECRET"})
	wantCheck(t, c, OK, "held back from claude, forks and !sh: TG (config secret), GITHUB_TOKEN (agent.env_drop *_TOKEN)")
	if strings.Contains(c.Detail, "SECRET") || strings.Contains(c.Detail, "ANTHROPIC") {
		t.Errorf("detail %q shows a value or a variable the agent keeps", c.Detail)
	}
	wantCheck(t, checkAgentEnv(agent, []string{"PATH=/bin"}), OK, "nothing in it is held back")
}

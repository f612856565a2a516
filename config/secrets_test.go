package config

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/agentenv"
)

// slackTOML is a Slack platform whose tokens come from SLACK_BOT and
// SLACK_APP (the bot token by way of a prefix), bound to "ws".
const slackTOML = `
[[platforms]]
name = "s"
type = "slack"
bot_token = "xoxb-${SLACK_BOT}"
app_token = "${SLACK_APP}"
[[bindings]]
platform = "s"
workspace = "ws"
allow_users = ["*"]
`

var slackEnv = map[string]string{"SLACK_BOT": "b1", "SLACK_APP": "xapp-a1", "OTHER": "x", "PROXY": "http://127.0.0.1:1"}

func TestSecretVarsFromPlatformTokens(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, minimal+slackTOML+`
[[platforms]]
name = "tg"
type = "telegram"
token = "123:literal"
[[bindings]]
platform = "tg"
workspace = "ws"
allow_users = ["*"]
`)
	cfg, err := load(path, envMap(slackEnv))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"SLACK_BOT": "platforms[1].bot_token", "SLACK_APP": "platforms[1].app_token"}
	if len(cfg.SecretVars) != 2 || cfg.SecretVars["SLACK_BOT"] != want["SLACK_BOT"] || cfg.SecretVars["SLACK_APP"] != want["SLACK_APP"] {
		t.Errorf("SecretVars = %v, want %v", cfg.SecretVars, want)
	}
	if !slices.Equal(cfg.LiteralSecrets, []string{"platforms[2].token"}) {
		t.Errorf("LiteralSecrets = %q", cfg.LiteralSecrets)
	}
	if got := cfg.SecretVarNames(); !slices.Equal(got, []string{"SLACK_APP", "SLACK_BOT"}) {
		t.Errorf("SecretVarNames = %q", got)
	}
	if !slices.Equal(cfg.Agent.EnvDrop, agentenv.DefaultEnvDrop) || cfg.Agent.RunAs != nil {
		t.Errorf("env_drop %q, user %v", cfg.Agent.EnvDrop, cfg.Agent.RunAs)
	}
}

func TestEnvRefs(t *testing.T) {
	for in, want := range map[string][]string{
		"":                 nil,
		"plain":            nil,
		"${A}":             {"A"},
		"x${A}y${B_2}":     {"A", "B_2"},
		"$${NOT}${YES}":    {"YES"},
		"${bad name}${OK}": {"OK"},
		"${UNCLOSED":       nil,
	} {
		if got := envRefs(in); !slices.Equal(got, want) {
			t.Errorf("envRefs(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAgentSecretErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		agent string
		want  string // "" = loads
	}{
		{"agent.env names a token's variable", `env = { SLACK_APP = "x" }`,
			"agent.env.SLACK_APP: SLACK_APP is the variable platforms[1].app_token is read from"},
		{"agent.env takes a token's variable", `env = { MY_COPY = "pre-${SLACK_BOT}" }`,
			"agent.env.MY_COPY: takes ${SLACK_BOT}, which platforms[1].bot_token is read from"},
		{"agent.env holds a token's value", `env = { MY_COPY = "xapp-a1" }`,
			"agent.env.MY_COPY: holds the value of platforms[1].app_token"},
		{"agent.env with other variables", `env = { ANTHROPIC_BASE_URL = "${PROXY}", GITHUB_TOKEN = "${OTHER}" }`, ""},
		{"env_drop with a bad entry", `env_drop = ["*_TOKEN", "A B"]`, `agent.env_drop[1]: "A B" is neither a variable name nor a pattern`},
		{"env_drop not a list", `env_drop = "*_TOKEN"`, "agent.env_drop: expected an array"},
		{"unknown agent.user", `user = "no-such-user-cc-connect"`, `agent.user: no user "no-such-user-cc-connect" in the user database`},
		{"unknown agent.user uid", `user = "3999999999"`, `agent.user: no user "3999999999"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeConfig(t, minimal+slackTOML+"[agent]\n"+tt.agent+"\n")
			_, err := load(path, envMap(slackEnv))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("load: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("load error = %v, want %q", err, tt.want)
			case err != nil && strings.Contains(err.Error(), "b1"):
				t.Errorf("the error quotes a token: %v", err)
			}
		})
	}
}

func TestEnvDropLeavingOutDefaultsWarns(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		list string
		warn string // "" = none
	}{
		{`["*_token", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*_PWD", "*_PASS", "*_API_KEY", "*_APIKEY", "*_PRIVATE_KEY", "*_ACCESS_KEY", "*_ACCESS_KEY_ID", "*_CREDENTIALS", "DATABASE_URL", "SSH_AUTH_SOCK", "MY_DB_PASS"]`, ""},
		{`["MY_DB_PASS"]`, "agent.env_drop leaves out *_TOKEN, *SECRET*"},
		{`[]`, "agent.env_drop leaves out *_TOKEN"},
	} {
		path := writeConfig(t, minimal+"[agent]\nenv_drop = "+tt.list+"\n")
		cfg, err := load(path, envMap(nil))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(cfg.Warnings, "\n")
		if (tt.warn == "") != (got == "") || !strings.Contains(got, tt.warn) {
			t.Errorf("env_drop %s: warnings %q, want %q", tt.list, cfg.Warnings, tt.warn)
		}
	}
}

func TestAgentUser(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"root", "0"} {
		path := writeConfig(t, minimal+"[agent]\nuser = \""+spec+"\"\n")
		cfg, err := load(path, envMap(nil))
		if err != nil {
			t.Fatal(err)
		}
		if u := cfg.Agent.RunAs; u == nil || u.UID != 0 || u.Name != "root" {
			t.Errorf("user %q: RunAs = %+v", spec, u)
		}
		if !strings.Contains(cfg.String(), `user = "`+spec+`"`) {
			t.Errorf("the printed config lacks agent.user:\n%s", cfg)
		}
	}
	// agent.user is resolved at load; whether it can take effect is a
	// question of who runs cc-connect.
	cfg := &Config{Agent: Agent{RunAs: &agentenv.User{Name: "someone", UID: uint32(os.Geteuid()) + 1}}}
	err := cfg.CheckAgentUser()
	if os.Geteuid() == 0 {
		if err != nil {
			t.Errorf("CheckAgentUser as root = %v", err)
		}
	} else if !errors.Is(err, agentenv.ErrNotRoot) || !strings.HasPrefix(err.Error(), "agent.user: ") {
		t.Errorf("CheckAgentUser as uid %d = %v", os.Geteuid(), err)
	}
}

// TestBypassPermissionsWithAgentUser: Claude Code refuses
// bypassPermissions as root only; an agent.user other than root spares
// the warning.
func TestBypassPermissionsWithAgentUser(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 || os.Getenv("IS_SANDBOX") == "1" {
		t.Skip("the warning concerns root without IS_SANDBOX=1")
	}
	for _, tt := range []struct {
		user string
		warn bool
	}{{"root", true}, {"nobody", false}} {
		path := writeConfig(t, minimal+"[agent]\npermission_mode = \"bypassPermissions\"\nuser = \""+tt.user+"\"\n")
		cfg, err := load(path, envMap(nil))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(strings.Join(cfg.Warnings, "\n"), "IS_SANDBOX=1"); got != tt.warn {
			t.Errorf("user %s: warning %t, want %t", tt.user, got, tt.warn)
		}
	}
}

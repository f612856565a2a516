package config

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/agentenv"
	"github.com/cc-connect/cc-connect/internal/testenv"
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

// hookTOML is a webhook whose secret comes from HOOK_SRC, beside slackTOML.
const hookTOML = `
[webhooks]
addr = "127.0.0.1:0"
[[webhooks.hooks]]
name = "ci"
secret = "${HOOK_SRC}"
platform = "s"
channel = "C1"
prompt = "p"
template = "{{.a}}"
`

var hookEnv = map[string]string{"SLACK_BOT": "b1", "SLACK_APP": "xapp-a1", "HOOK_SRC": "hook-canary-0123456789", "OTHER": "x"}

// TestSecretsOfWebhooksAndCluster: a webhook's secret is a secret like a
// platform token (its variable and its value), and so are the cluster's
// seed and JWT, read from its files; the variables of the files' paths
// are not (they hold paths, such as ${HOME}).
func TestSecretsOfWebhooksAndCluster(t *testing.T) {
	t.Parallel()
	seed := "SUA" + strings.Repeat("B", 55)
	jwt := "eyJ0eXAiOiJKV1QifQ.eyJzdWIiOiJ0ZXN0In0.c2lnbmF0dXJl"
	dir := t.TempDir()
	creds := filepath.Join(dir, "host.creds")
	if err := os.WriteFile(creds, []byte("-----BEGIN NATS USER JWT-----\n"+jwt+"\n------END NATS USER JWT------\n\n"+
		"************************* IMPORTANT *************************\n-----BEGIN USER NKEY SEED-----\n"+seed+"\n------END USER NKEY SEED------\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := writeConfig(t, minimal+strings.Replace(slackTOML, `allow_users = ["*"]`, "allow_users = [\"*\"]\nhost = \"a\"", 1)+hookTOML+`
[cluster]
host = "a"
members = ["a"]
urls = ["nats://n1:4222"]
creds_file = "${CREDS_DIR}/host.creds"
`)
	env := maps.Clone(hookEnv)
	env["CREDS_DIR"] = dir
	cfg, err := load(path, envMap(env))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.SecretVarNames(); !slices.Equal(got, []string{"HOOK_SRC", "SLACK_APP", "SLACK_BOT"}) {
		t.Errorf("SecretVarNames = %q", got)
	}
	if cfg.SecretVars["HOOK_SRC"] != "webhooks.hooks[0].secret" {
		t.Errorf("HOOK_SRC is read by %q", cfg.SecretVars["HOOK_SRC"])
	}
	vals := cfg.SecretValues()
	slices.Sort(vals)
	want := []string{seed, "b1", jwt, "hook-canary-0123456789", "xapp-a1", "xoxb-b1"}
	slices.Sort(want)
	if !slices.Equal(vals, want) {
		t.Errorf("SecretValues = %q, want %q", vals, want)
	}
}

// TestEnvCannotCarryASecret: agent.env and a binding's env refuse a
// webhook secret like a platform token, by name, by ${VAR} and by value,
// naming the key; the error never quotes the secret.
func TestEnvCannotCarryASecret(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, extra, want string }{
		{"agent.env takes the hook's variable", "[agent]\nenv = { X = \"${HOOK_SRC}\" }\n",
			"agent.env.X: takes ${HOOK_SRC}, which webhooks.hooks[0].secret is read from: the agent must not get a secret"},
		{"agent.env names the hook's variable", "[agent]\nenv = { HOOK_SRC = \"x\" }\n",
			"agent.env.HOOK_SRC: HOOK_SRC is the variable webhooks.hooks[0].secret is read from"},
		{"agent.env holds the hook's value", "[agent]\nenv = { X = \"hook-canary-0123456789\" }\n",
			"agent.env.X: holds the value of webhooks.hooks[0].secret"},
		{"agent.env copies a token through another variable", "[agent]\nenv = { X = \"${COPY}\" }\n",
			"agent.env.X: holds the value of platforms[1].app_token"},
		{"a binding's env takes the hook's variable", "[[bindings]]\nplatform = \"s\"\nchannel = \"C2\"\nworkspace = \"ws\"\nallow_users = [\"*\"]\nenv = { Y = \"${HOOK_SRC}\" }\n",
			"bindings[2].env.Y: takes ${HOOK_SRC}, which webhooks.hooks[0].secret is read from"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := maps.Clone(hookEnv)
			env["COPY"] = "xapp-a1"
			_, err := load(writeConfig(t, minimal+slackTOML+hookTOML+tt.extra), envMap(env))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("load error = %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "hook-canary") || strings.Contains(err.Error(), "xapp-a1") {
				t.Errorf("the error quotes a secret: %v", err)
			}
		})
	}
}

// TestRootWithoutAgentUser: as root, with the agent as root too, a config
// that serves more than the terminal is refused unless agent.allow_root
// says the admin accepts it.
func TestRootWithoutAgentUser(t *testing.T) {
	t.Parallel()
	testenv.NeedRoot(t, "the check is about running as root")
	const tg = "[[platforms]]\nname = \"tg\"\ntype = \"telegram\"\ntoken = \"123:abc\"\n[[bindings]]\nplatform = \"tg\"\nworkspace = \"ws\"\nallow_users = [\"*\"]\n"
	const hook = "[webhooks]\naddr = \"127.0.0.1:0\"\n[[webhooks.hooks]]\nname = \"h\"\nsecret = \"0123456789abcdef\"\nplatform = \"local\"\nchannel = \"local\"\nprompt = \"p\"\ntemplate = \"{{.a}}\"\n"
	tests := []struct {
		name, extra, want string // want "" = allowed
	}{
		{"the terminal alone", "", ""},
		{"a chat platform", tg, "for platform tg"},
		{"a webhook listener", hook, "for the webhook listener"},
		{"agent.user root", tg + "[agent]\nuser = \"root\"\n", "for platform tg"},
		{"agent.user another user", tg + "[agent]\nuser = \"nobody\"\n", ""},
		{"allow_root", tg + "[agent]\nallow_root = true\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := load(writeConfig(t, minimal+tt.extra), envMap(nil))
			if err != nil {
				t.Fatal(err)
			}
			err = cfg.CheckRoot()
			if tt.want == "" {
				if err != nil {
					t.Errorf("CheckRoot = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrRootAgent) || !strings.HasPrefix(err.Error(), "agent.allow_root: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CheckRoot = %v, want agent.allow_root ... %s", err, tt.want)
			}
		})
	}
}

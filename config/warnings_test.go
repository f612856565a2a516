package config

import (
	"os"
	"strings"
	"testing"
)

func TestWarnings(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `
[[platforms]]
name = "local"
type = "local"
[[platforms]]
name = "d"
type = "discord"
token = "t"
[[bindings]]
platform = "local"
workspace = "ws"
[[bindings]]
platform = "local"
channel = "local"
workspace = "ws"
allow_users = ["alice"]
admins = ["alice", "bob"]
approvers = ["alice", "carol"]
`)
	cfg, err := load(path, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(cfg.Warnings, "\n")
	if strings.Contains(got, `"alice" is not in allow_users`) {
		t.Errorf("warned about an allowed admin or approver:\n%s", got)
	}
	for _, w := range []string{
		"bindings[0].allow_users is empty: nobody may use this binding",
		`platform "d" has no [[bindings]] entry`,
		`bindings[1].admins: "bob" is not in allow_users`,
		`bindings[1].approvers: "carol" is not in allow_users, so cannot answer permission prompts`,
	} {
		if !strings.Contains(got, w) {
			t.Errorf("warnings lack %q:\n%s", w, got)
		}
	}
}

func TestBypassPermissionsAsRootWarns(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 || os.Getenv("IS_SANDBOX") == "1" {
		t.Skip("the warning concerns root without IS_SANDBOX=1")
	}
	for _, tt := range []struct {
		env  string
		warn bool
	}{
		{"", true},
		{`env = { IS_SANDBOX = "1" }`, false},
	} {
		path := writeConfig(t, minimal+"[agent]\npermission_mode = \"bypassPermissions\"\n"+tt.env+"\n")
		cfg, err := load(path, envMap(nil))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(strings.Join(cfg.Warnings, "\n"), "IS_SANDBOX=1")
		if got != tt.warn {
			t.Errorf("env %q: warning %t, want %t (%q)", tt.env, got, tt.warn, cfg.Warnings)
		}
	}
}

func TestLiteralTokenInReadableFileWarns(t *testing.T) {
	t.Parallel()
	text := minimal + `
[[platforms]]
name = "s"
type = "slack"
bot_token = "xoxb-literal"
app_token = "${APP}"
[[bindings]]
platform = "s"
workspace = "ws"
allow_users = ["*"]
`
	for _, tt := range []struct {
		mode os.FileMode
		warn bool
	}{{0o644, true}, {0o600, false}} {
		path := writeConfig(t, text)
		if err := os.Chmod(path, tt.mode); err != nil {
			t.Fatal(err)
		}
		cfg, err := load(path, envMap(map[string]string{"APP": "xapp-1"}))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(cfg.Warnings, "\n")
		if strings.Contains(got, "platforms[1].bot_token is written in") != tt.warn || strings.Contains(got, "app_token") {
			t.Errorf("mode %04o: warnings %q", tt.mode, cfg.Warnings)
		}
	}
}

// TestOpenBindingWarns: a chat binding open to every channel and every
// user is named; either wildcard alone, and the terminal, are not.
func TestOpenBindingWarns(t *testing.T) {
	t.Parallel()
	const platforms = minimal + `
[[platforms]]
name = "team-slack"
type = "slack"
bot_token = "xoxb-1"
app_token = "xapp-1"
[[platforms]]
name = "tg"
type = "telegram"
token = "123:abc"
`
	for _, tt := range []struct {
		name    string
		binding string
		want    string // "" = no such warning
	}{
		{"slack, both wildcards", "platform = \"team-slack\"\nallow_users = [\"*\"]\n",
			`bindings[1] (platform "team-slack"): channel = "*" with allow_users = ["*"] lets anyone who can reach the bot`},
		{"telegram, channel written out", "platform = \"tg\"\nchannel = \"*\"\nallow_users = [\"U1\", \"*\"]\n",
			`bindings[1] (platform "tg"): channel = "*" with allow_users = ["*"]`},
		{"named channel", "platform = \"team-slack\"\nchannel = \"C0123\"\nallow_users = [\"*\"]\n", ""},
		{"named users", "platform = \"team-slack\"\nallow_users = [\"U1\", \"U2\"]\n", ""},
		{"local", "platform = \"local\"\nchannel = \"local\"\nallow_users = [\"*\"]\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := load(writeConfig(t, platforms+"[[bindings]]\nworkspace = \"ws\"\n"+tt.binding+
				"[[bindings]]\nplatform = \"tg\"\nchannel = \"-100\"\nworkspace = \"ws\"\nallow_users = [\"*\"]\n"), envMap(nil))
			if err != nil {
				t.Fatal(err)
			}
			var open []string
			for _, w := range cfg.Warnings {
				if strings.Contains(w, `with allow_users = ["*"]`) {
					open = append(open, w)
				}
			}
			switch {
			case tt.want == "" && len(open) > 0:
				t.Errorf("warned: %q", open)
			case tt.want != "" && (len(open) != 1 || !strings.Contains(open[0], tt.want) || !strings.Contains(open[0], cfg.Bindings[1].Workspace)):
				t.Errorf("warnings %q, want one with %q naming the workspace", cfg.Warnings, tt.want)
			}
		})
	}
}

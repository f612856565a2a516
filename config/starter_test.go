package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/workspace"
)

// TestStarterLoads: what `cc-connect init` writes loads for every
// platform once its variables are set, binds the workspace it was given
// (whatever characters its path holds), keeps every secret in the
// environment, and warns only that nobody is allowed yet.
func TestStarterLoads(t *testing.T) {
	t.Parallel()
	tokens := map[string]string{
		"SLACK_BOT_TOKEN":    "xoxb-1-2-abc",
		"SLACK_APP_TOKEN":    "xapp-1-A1-2-abc",
		"DISCORD_BOT_TOKEN":  "discord-token",
		"TELEGRAM_BOT_TOKEN": "123456:abc",
	}
	for _, tt := range []struct {
		platform string
		vars     []string
		warnings []string
	}{
		{TypeLocal, nil, nil},
		{TypeSlack, []string{"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"}, []string{"bindings[0].allow_users is empty: nobody may use this binding"}},
		{TypeDiscord, []string{"DISCORD_BOT_TOKEN"}, []string{"bindings[0].allow_users is empty: nobody may use this binding"}},
		{TypeTelegram, []string{"TELEGRAM_BOT_TOKEN"}, []string{"bindings[0].allow_users is empty: nobody may use this binding"}},
	} {
		t.Run(tt.platform, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ws := filepath.Join(dir, `my "app" $HOME \ été`)
			if err := os.Mkdir(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			s, err := NewStarter(tt.platform, ws)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.Vars, tt.vars) {
				t.Errorf("Vars = %q, want %q", s.Vars, tt.vars)
			}
			for _, v := range tt.vars {
				if !strings.Contains(string(s.Text), "${"+v+"}") || !strings.Contains(string(s.Text), "#   "+v+"\n") {
					t.Errorf("the file neither reads nor names %s:\n%s", v, s.Text)
				}
			}
			path := filepath.Join(dir, "config.toml")
			if err := os.WriteFile(path, s.Text, 0o600); err != nil {
				t.Fatal(err)
			}
			env := map[string]string{}
			for _, v := range tt.vars {
				env[v] = tokens[v]
			}
			cfg, err := load(path, envMap(env))
			if err != nil {
				t.Fatalf("the starter config does not load: %v\n%s", err, s.Text)
			}
			if len(cfg.Platforms) != 1 || cfg.Platforms[0].Type != tt.platform || len(cfg.Bindings) != 1 {
				t.Fatalf("platforms %v, bindings %v", cfg.Platforms, cfg.Bindings)
			}
			if got, want := cfg.Bindings[0].Workspace, workspace.Normalize(ws, nil); got != want {
				t.Errorf("workspace %q, want %q", got, want)
			}
			if len(cfg.LiteralSecrets) != 0 || len(cfg.SecretVars) != len(tt.vars) {
				t.Errorf("literal secrets %q, secret variables %v", cfg.LiteralSecrets, cfg.SecretVars)
			}
			if len(cfg.Warnings) != len(tt.warnings) {
				t.Errorf("warnings %q, want %q", cfg.Warnings, tt.warnings)
			}
			for i, w := range tt.warnings {
				if i < len(cfg.Warnings) && !strings.Contains(cfg.Warnings[i], w) {
					t.Errorf("warning %q, want %q", cfg.Warnings[i], w)
				}
			}
			// Without the variables it refuses, naming them.
			if len(tt.vars) > 0 {
				_, err := load(path, envMap(nil))
				if err == nil || !strings.Contains(err.Error(), "environment variable "+tt.vars[0]+" is not set") {
					t.Errorf("loading without the variables: %v", err)
				}
			}
		})
	}
}

func TestStarterRefuses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ platform, workspace, want string }{
		{"irc", "/srv/app", `platform "irc" is not one of slack, discord, telegram, local`},
		{TypeSlack, "app", `workspace "app" is not an absolute path`},
	} {
		if _, err := NewStarter(tt.platform, tt.workspace); err == nil || err.Error() != tt.want {
			t.Errorf("NewStarter(%q, %q) = %v, want %q", tt.platform, tt.workspace, err, tt.want)
		}
	}
}

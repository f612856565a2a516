package config

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func repoFile(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join("..", name)
}

// TestExampleLoadsAsShipped: the file new users copy must work unchanged.
func TestExampleLoadsAsShipped(t *testing.T) {
	t.Parallel()
	cfg, err := load(repoFile(t, "config.example.toml"), envMap(nil))
	if err != nil {
		t.Fatalf("config.example.toml does not load: %v", err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("config.example.toml loads with warnings: %q", cfg.Warnings)
	}
	// Its values are the defaults, so the comment "keys left out take the
	// default shown here" stays true.
	want := Default()
	got := cfg.Agent
	if len(got.Args) == 0 && len(got.Env) == 0 {
		got.Args, got.Env = nil, nil // [] and {} in the file, nil by default
	}
	if !reflect.DeepEqual(got, want.Agent) {
		t.Errorf("[agent] in config.example.toml differs from Default():\n got %+v\nwant %+v", got, want.Agent)
	}
	if cfg.Log != want.Log || cfg.Files != want.Files || cfg.State.SeenWindow != want.State.SeenWindow {
		t.Errorf("config.example.toml differs from Default():\n%s", cfg)
	}
	if b := cfg.Bindings[0]; b.Channel != defaultBinding().Channel || b.AllowShell || b.RequireMention != nil {
		t.Errorf("[[bindings]] in config.example.toml differs from the defaults: %+v", b)
	}
}

var (
	sectionLine = regexp.MustCompile(`^#?\s*\[\[?([a-z_.]+)\]\]?\s*(#.*)?$`)
	keyLine     = regexp.MustCompile(`^#?\s*([a-z_]+)\s*=`)
)

// exampleKeys lists the keys config.example.toml shows, commented-out ones
// included (the Slack, Discord and Telegram blocks), as KnownKeys spells
// them.
func exampleKeys(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(repoFile(t, "config.example.toml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var keys []string
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := sectionLine.FindStringSubmatch(line); m != nil {
			section = m[1]
			if strings.Contains(line, "[[") {
				section += "[]"
			}
			continue
		}
		if m := keyLine.FindStringSubmatch(line); m != nil {
			key := m[1]
			if section != "" {
				key = section + "." + key
			}
			keys = append(keys, key)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestExampleAndDocsMatchLoader keeps config.example.toml,
// docs/configuration.md and the loader from drifting: every key the loader
// knows is shown in the example and documented, and the example shows no
// key the loader would reject.
func TestExampleAndDocsMatchLoader(t *testing.T) {
	t.Parallel()
	known := KnownKeys()
	example := exampleKeys(t)
	docs, err := os.ReadFile(repoFile(t, "docs/configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range example {
		if !containsString(known, k) {
			t.Errorf("config.example.toml shows %s, which the loader does not know", k)
		}
	}
	for _, k := range known {
		if !containsString(example, k) {
			t.Errorf("%s is not shown in config.example.toml", k)
		}
		section, leaf := "", k
		if i := strings.LastIndex(k, "."); i >= 0 {
			section, leaf = k[:i], k[i+1:]
		}
		heading := "## `[" + section + "]`"
		if strings.HasSuffix(section, "[]") {
			heading = "## `[[" + strings.TrimSuffix(section, "[]") + "]]`"
		}
		if !docMentions(string(docs), heading, leaf) {
			t.Errorf("%s is not documented under %s in docs/configuration.md", k, heading)
		}
	}
}

// docMentions reports whether the section under heading has a table row
// for key.
func docMentions(docs, heading, key string) bool {
	i := strings.Index(docs, heading)
	if i < 0 {
		return false
	}
	body := docs[i+len(heading):]
	if j := strings.Index(body, "\n## "); j >= 0 {
		body = body[:j]
	}
	return strings.Contains(body, "| `"+key+"` |")
}

func TestSecretsNeverPrinted(t *testing.T) {
	t.Parallel()
	const (
		bot   = "xoxb-BOTSECRET"
		app   = "xapp-APPSECRET"
		tg    = "123:TGSECRET"
		apiKy = "sk-ENVSECRET"
		pass  = "URLSECRET"
	)
	path := writeConfig(t, `
[agent]
env = { ANTHROPIC_API_KEY = "${KEY}" }
[[platforms]]
name = "local"
type = "local"
[[platforms]]
name = "slack"
type = "slack"
bot_token = "${BOT}"
app_token = "${APP}"
api_url = "https://user:${PASS}@slack.example/api/?key=${PASS}"
[[platforms]]
name = "tg"
type = "telegram"
token = "${TG}"
[[bindings]]
platform = "local"
workspace = "ws"
allow_users = ["*"]
[[bindings]]
platform = "slack"
workspace = "ws"
allow_users = ["*"]
[[bindings]]
platform = "tg"
workspace = "ws"
allow_users = ["*"]
`)
	cfg, err := load(path, envMap(map[string]string{"BOT": bot, "APP": app, "TG": tg, "KEY": apiKy, "PASS": pass}))
	if err != nil {
		t.Fatal(err)
	}
	var logBuf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logBuf, nil))
	log.Info("Config loaded", "config", cfg, "platform", cfg.Platforms[1], "agent_env", cfg.Agent.Env)
	jsonOut, err := json.Marshal(cfg.Platforms[1].BotToken)
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{
		"String()": cfg.String(),
		"%v":       fmt.Sprintf("%v", cfg),
		"%+v":      fmt.Sprintf("%+v", *cfg),
		"%#v":      fmt.Sprintf("%#v", *cfg),
		"%#v ptr":  fmt.Sprintf("%#v", cfg),
		"slog":     logBuf.String(),
		"json":     string(jsonOut), // a Secret alone
	}
	for name, out := range outputs {
		for _, secret := range []string{"BOTSECRET", "APPSECRET", "TGSECRET", "ENVSECRET", "URLSECRET"} {
			if strings.Contains(out, secret) {
				t.Errorf("%s output contains %s:\n%s", name, secret, out)
			}
		}
	}
	if !strings.Contains(cfg.String(), `bot_token = "[redacted]"`) || !strings.Contains(cfg.String(), `"ANTHROPIC_API_KEY" = "[redacted]"`) {
		t.Errorf("String() should show that secrets are set:\n%s", cfg.String())
	}
	if cfg.Platforms[1].BotToken.Reveal() != bot {
		t.Error("Reveal() lost the token")
	}
}

func TestSecretErrorsDoNotLeak(t *testing.T) {
	t.Parallel()
	// A token with the wrong prefix is reported without its value.
	path := writeConfig(t, minimal+"[[platforms]]\nname = \"s\"\ntype = \"slack\"\nbot_token = \"xapp-LEAKME\"\napp_token = \"${APP}\"\n")
	_, err := load(path, envMap(map[string]string{"APP": "wrong-LEAKME-TOO-long-secret"}))
	if err == nil {
		t.Fatal("loaded without error")
	}
	if strings.Contains(err.Error(), "LEAKME") {
		t.Errorf("error leaks a token: %v", err)
	}
}

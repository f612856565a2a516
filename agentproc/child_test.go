package agentproc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/testenv"
)

func TestBuildEnvDropsSecrets(t *testing.T) {
	base := []string{
		"PATH=/bin", "HOME=/root", "SLACK_BOT_TOKEN=xoxb-1", "MY_BOT=tg", "GITHUB_TOKEN=ghp", "github_token=ghp2",
		"AWS_SECRET_ACCESS_KEY=aws", "AWS_ACCESS_KEY_ID=id", "PGPASSWORD=pg", "OPENAI_API_KEY=oa",
		"SSH_AUTH_SOCK=/tmp/agent", "ANTHROPIC_API_KEY=sk", "ANTHROPIC_AUTH_TOKEN=at", "CLAUDE_CODE_OAUTH_TOKEN=oauth",
		"MAX_THINKING_TOKENS=8000", "TOKENIZERS_PARALLELISM=false", "OLDPWD=/x",
	}
	tests := []struct {
		name string
		cfg  Config
		want []string // the keys of the result, in order
	}{
		{
			name: "platform secrets and the default drop list",
			cfg:  Config{EnvDrop: DefaultEnvDrop, Secrets: NewSecretVars("MY_BOT", "SLACK_BOT_TOKEN")},
			want: []string{"PATH", "HOME", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
				"MAX_THINKING_TOKENS", "TOKENIZERS_PARALLELISM", "OLDPWD",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_AUTOUPDATER"},
		},
		{
			name: "an exact entry drops even the agent's own names",
			cfg:  Config{EnvDrop: []string{"ANTHROPIC_API_KEY", "claude_*"}},
			want: []string{"PATH", "HOME", "SLACK_BOT_TOKEN", "MY_BOT", "GITHUB_TOKEN", "github_token",
				"AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "PGPASSWORD", "OPENAI_API_KEY", "SSH_AUTH_SOCK",
				"ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "MAX_THINKING_TOKENS", "TOKENIZERS_PARALLELISM", "OLDPWD",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_AUTOUPDATER"},
		},
		{
			name: "agent.env gives back a dropped name, never a platform secret",
			cfg: Config{EnvDrop: DefaultEnvDrop, Secrets: NewSecretVars("SLACK_BOT_TOKEN"),
				Env: map[string]string{"GITHUB_TOKEN": "scoped", "SLACK_BOT_TOKEN": "xoxb-1"}},
			want: []string{"PATH", "HOME", "MY_BOT", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
				"MAX_THINKING_TOKENS", "TOKENIZERS_PARALLELISM", "OLDPWD",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_AUTOUPDATER", "GITHUB_TOKEN"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BuildEnv(base, tt.cfg)
			keys := make([]string, len(got))
			for i, kv := range got {
				keys[i], _, _ = strings.Cut(kv, "=")
			}
			if !slices.Equal(keys, tt.want) {
				t.Errorf("BuildEnv keys =\n %q\nwant\n %q", keys, tt.want)
			}
		})
	}
	got := BuildEnv(base, Config{EnvDrop: DefaultEnvDrop, Env: map[string]string{"GITHUB_TOKEN": "scoped"}})
	if !slices.Contains(got, "GITHUB_TOKEN=scoped") || slices.Contains(got, "GITHUB_TOKEN=ghp") {
		t.Errorf("agent.env's value did not win: %q", got)
	}
}

func TestBuildEnvForAnotherUser(t *testing.T) {
	other := &User{Name: "agent", UID: uint32(os.Geteuid()) + 1, GID: 4242, Groups: []uint32{4242}, Home: "/home/agent"}
	base := []string{"HOME=/root", "USER=root", "LOGNAME=root", "CLAUDE_CONFIG_DIR=/root/.claude", "XDG_RUNTIME_DIR=/run/user/0", "PATH=/bin"}
	got := BuildEnv(base, Config{User: other})
	want := []string{"PATH=/bin", "HOME=/home/agent", "USER=agent", "LOGNAME=agent",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
	if !slices.Equal(got, want) {
		t.Errorf("BuildEnv =\n %q\nwant\n %q", got, want)
	}
	// agent.env still decides, HOME and the config dir included.
	got = BuildEnv(base, Config{User: other, Env: map[string]string{"CLAUDE_CONFIG_DIR": "/srv/claude", "HOME": "/srv/home"}})
	if !slices.Contains(got, "CLAUDE_CONFIG_DIR=/srv/claude") || !slices.Contains(got, "HOME=/srv/home") {
		t.Errorf("agent.env lost to agent.user: %q", got)
	}
	// The user cc-connect already runs as changes nothing.
	self := &User{Name: "me", UID: uint32(os.Geteuid()), Home: "/elsewhere"}
	if got := BuildEnv(base, Config{User: self}); !slices.Contains(got, "HOME=/root") || !slices.Contains(got, "CLAUDE_CONFIG_DIR=/root/.claude") {
		t.Errorf("agent.user naming cc-connect's own user changed the environment: %q", got)
	}
	if c := Credential(Config{User: self}); c != nil {
		t.Errorf("Credential for cc-connect's own user = %+v, want nil", c)
	}
	c := Credential(Config{User: other})
	if c == nil || c.Uid != other.UID || c.Gid != 4242 || !slices.Equal(c.Groups, []uint32{4242}) {
		t.Errorf("Credential = %+v", c)
	}
}

func TestDropReason(t *testing.T) {
	cfg := Config{EnvDrop: DefaultEnvDrop, Secrets: NewSecretVars("TG")}
	for name, want := range map[string]string{
		"TG":                    "config secret",
		"GITHUB_TOKEN":          "agent.env_drop *_TOKEN",
		"AWS_SECRET_ACCESS_KEY": "agent.env_drop *SECRET*",
		"AWS_ACCESS_KEY_ID":     "agent.env_drop *_ACCESS_KEY_ID",
		"DATABASE_URL":          "agent.env_drop DATABASE_URL",
		"database_url":          "agent.env_drop DATABASE_URL",
		"ANTHROPIC_AUTH_TOKEN":  "",
		"PATH":                  "",
	} {
		if got := DropReason(name, cfg); got != want {
			t.Errorf("DropReason(%s) = %q, want %q", name, got, want)
		}
	}
}

func TestCheckEnvPattern(t *testing.T) {
	for _, ok := range []string{"GITHUB_TOKEN", "*_TOKEN", "AWS_?", "[AB]_KEY", "lower_case"} {
		if err := CheckEnvPattern(ok); err != nil {
			t.Errorf("CheckEnvPattern(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "A B", "A=B", "[AB", "$X", "A/B"} {
		if err := CheckEnvPattern(bad); err == nil {
			t.Errorf("CheckEnvPattern(%q) accepted it", bad)
		}
	}
}

func TestSecretVarsShared(t *testing.T) {
	var nilSet *SecretVars
	if nilSet.Has("X") || nilSet.Names() != nil {
		t.Error("a nil set is not empty")
	}
	nilSet.Add("X") // must not panic
	s := NewSecretVars("B")
	cfg := Config{Secrets: s}
	copied := cfg
	s.Add("A") // a reload adds a name: copies made before see it
	if !copied.Secrets.Has("A") || !slices.Equal(s.Names(), []string{"A", "B"}) {
		t.Errorf("names = %q", s.Names())
	}
}

func TestLookupUser(t *testing.T) {
	root, err := LookupUser("0")
	if err != nil {
		t.Fatalf("LookupUser(0): %v", err)
	}
	if root.UID != 0 || root.Name != "root" || !slices.Contains(root.Groups, root.GID) {
		t.Errorf("root = %+v", root)
	}
	byName, err := LookupUser("root")
	if err != nil || byName.UID != 0 || byName.Home != root.Home {
		t.Errorf("LookupUser(root) = %+v, %v", byName, err)
	}
	for _, bad := range []string{"", "no-such-user-cc", "4000000000"} {
		if _, err := LookupUser(bad); err == nil {
			t.Errorf("LookupUser(%q) found a user", bad)
		}
	}
}

func TestCheckSwitch(t *testing.T) {
	if err := CheckSwitch(nil); err != nil {
		t.Errorf("CheckSwitch(nil) = %v", err)
	}
	if err := CheckSwitch(&User{Name: "me", UID: uint32(os.Geteuid())}); err != nil {
		t.Errorf("CheckSwitch(self) = %v", err)
	}
	err := CheckSwitch(&User{Name: "other", UID: uint32(os.Geteuid()) + 1})
	if os.Geteuid() == 0 {
		if err != nil {
			t.Errorf("CheckSwitch as root = %v", err)
		}
		return
	}
	if !errors.Is(err, ErrNotRoot) || !strings.Contains(err.Error(), "other") {
		t.Errorf("CheckSwitch as uid %d = %v, want ErrNotRoot naming the user", os.Geteuid(), err)
	}
}

func TestConfigDirFor(t *testing.T) {
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("HOME", "/home/bot")
	if got := ConfigDirFor(Config{}); got != "/home/bot/.claude" {
		t.Errorf("ConfigDirFor = %s", got)
	}
	if got := ConfigDirFor(Config{Env: map[string]string{"CLAUDE_CONFIG_DIR": "/srv/c"}}); got != "/srv/c" {
		t.Errorf("ConfigDirFor with agent.env = %s", got)
	}
	t.Setenv("CLAUDE_CONFIG_DIR", "/bot/claude")
	if got := ConfigDirFor(Config{}); got != "/bot/claude" {
		t.Errorf("ConfigDirFor with the inherited variable = %s", got)
	}
	// Another user's agent keeps its transcripts in its own home.
	other := &User{Name: "agent", UID: uint32(os.Geteuid()) + 1, Home: "/home/agent"}
	if got := ConfigDirFor(Config{User: other}); got != "/home/agent/.claude" {
		t.Errorf("ConfigDirFor(agent.user) = %s", got)
	}
}

// TestChildrenGetNoSecrets: the claude process and a fork of it (!btw) see
// none of the variables the rule drops, while what agent.env gives them
// arrives.
func TestChildrenGetNoSecrets(t *testing.T) {
	t.Setenv("CCX_SLACK_BOT", "xoxb-canary-platform")
	t.Setenv("GITHUB_TOKEN", "ghp-canary-pattern")
	t.Setenv("CCX_VISIBLE", "passes-through")
	e := newFakeEnv(t)
	e.env["CCX_GIVEN"] = "from-agent-env"
	cfg := Config{Command: e.bin, Env: e.env, EnvDrop: DefaultEnvDrop, Secrets: NewSecretVars("CCX_SLACK_BOT"), CloseGrace: e.grace}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	check := func(what string, opts StartOptions) string {
		t.Helper()
		opts.Dir = e.dir
		p, err := Start(ctx, cfg, opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(context.Background())
		res, err := runTurn(ctx, p, "[[EXEC:env; cat /proc/self/environ | tr '\\0' '\\n']]", nil)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for _, leaked := range []string{"xoxb-canary-platform", "ghp-canary-pattern"} {
			if strings.Contains(res.Text, leaked) {
				t.Errorf("%s: the child's environment holds %q:\n%s", what, leaked, res.Text)
			}
		}
		for _, want := range []string{"exec exit 0", "CCX_VISIBLE=passes-through", "CCX_GIVEN=from-agent-env"} {
			if !strings.Contains(res.Text, want) {
				t.Errorf("%s: reply lacks %q:\n%s", what, want, res.Text)
			}
		}
		return p.SessionID()
	}
	id := check("claude", StartOptions{})
	check("a fork", StartOptions{ResumeID: id, Fork: true})
	if _, err := os.Stat(filepath.Join(e.configDir, "projects")); err != nil {
		t.Errorf("no transcripts where agent.env put the config dir: %v", err)
	}
}

// TestStartAsAnotherUser: as root, a User runs the CLI under that user's
// credential and home, a turn works, its transcript lands in the config dir
// agent.env names, and Close still ends a process group of another user
// that ignores SIGTERM.
func TestStartAsAnotherUser(t *testing.T) {
	testenv.NeedRoot(t, "starting the agent as another user")
	nobody, err := LookupUser("65534")
	if err != nil {
		testenv.Missing(t, "no uid 65534 here: %v", err)
	}
	root := t.TempDir()
	if err := os.Chmod(filepath.Dir(root), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	// The fake must be where nobody may run it; the build folder is private.
	bin := filepath.Join(root, "claude")
	data, err := os.ReadFile(newFakeEnv(t).bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	ws, configDir := filepath.Join(root, "ws"), filepath.Join(root, "config")
	for _, d := range []string{ws, configDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{Command: bin, User: nobody, CloseGrace: 50 * time.Millisecond,
		Env: map[string]string{"CLAUDE_CONFIG_DIR": configDir, "FAKECLAUDE_IGNORE_SIGTERM": "1"}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Start(ctx, cfg, StartOptions{Dir: ws}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := runTurn(ctx, p, `[[EXEC:id -u; id -G; echo "home=$HOME user=$USER"]]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "exec exit 0:\n65534\n65534\nhome=" + nobody.Home + " user=" + nobody.Name + "\n"; res.Text != want {
		t.Errorf("reply %q, want %q", res.Text, want)
	}
	if path, _, err := FindTranscript(ConfigDirFor(cfg), p.SessionID()); err != nil || !strings.HasPrefix(path, configDir) {
		t.Errorf("transcript %s, %v; want one under %s", path, err, configDir)
	}
	waitHanging(t, p)
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var ee *ExitError
	if !errors.As(p.Err(), &ee) || ee.Signal != "SIGKILL" {
		t.Errorf("Err = %v, want the SIGKILL that ends another user's group", p.Err())
	}
}

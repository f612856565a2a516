package doctor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/internal/testenv"
	"github.com/cc-connect/cc-connect/lease"
)

const (
	slackBot = "xoxb-1111-SECRETBOT"
	slackApp = "xapp-1-SECRETAPP"
	tgToken  = "123456:SECRETTG"
)

// fakeClaudes are executable scripts standing in for claude, by name. They
// are all written in TestMain, before any test runs: writing an executable
// while a parallel test forks can leak its write fd into the child and make
// exec fail with "text file busy".
var fakeClaudes = map[string]string{
	"tested":  `echo "` + agentproc.TestedClaudeVersion + ` (Claude Code)"`,
	"older":   `echo "2.0.1 (Claude Code)"`,
	"env":     `echo "$FAKE_VERSION (Claude Code)"`,
	"offline": `echo "$DISABLE_AUTOUPDATER.$CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC.0"`,
	"fails":   `echo "node: bad option" >&2; exit 3`,
	"hello":   `echo hello`,
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "doctor-fake-claude-")
	if err != nil {
		panic(err)
	}
	for name, script := range fakeClaudes {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			panic(err)
		}
		fakeClaudes[name] = path
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// noEnv is a process environment with nothing in it but HOME, pointing at
// an empty folder, so the host's own login never leaks into a test.
func noEnv(t *testing.T) []string {
	home := t.TempDir()
	return envOf(map[string]string{"HOME": home})
}

// envOf is an environment list holding m, sorted.
func envOf(m map[string]string) []string {
	env := make([]string, 0, len(m))
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env
}

// goodConfig is a config whose every check passes on this host: a fake
// claude of the tested version, an API key, real folders, free locks.
func goodConfig(t *testing.T) (*config.Config, Options) {
	t.Helper()
	ws := t.TempDir()
	state := filepath.Join(t.TempDir(), "state")
	cfg := config.Default()
	cfg.State.Dir = state
	cfg.Agent.Command = fakeClaudes["tested"]
	cfg.Agent.Env = map[string]config.Secret{"ANTHROPIC_API_KEY": "sk-SECRETKEY"}
	// As root (CI runs the tier as root), chat platforms without
	// agent.user need the admin's word: doctor then warns (agent user).
	cfg.Agent.AllowRoot = os.Geteuid() == 0
	cfg.Platforms = []config.Platform{
		{Name: "local", Type: config.TypeLocal},
		{Name: "eng", Type: config.TypeSlack, BotToken: slackBot, AppToken: slackApp},
		{Name: "tg", Type: config.TypeTelegram, Token: tgToken},
	}
	cfg.Bindings = []config.Binding{
		{Platform: "local", Channel: "*", Workspace: ws},
		{Platform: "eng", Channel: "C1", Workspace: ws},
		{Platform: "tg", Channel: "-100", Workspace: ws},
	}
	return &cfg, Options{Environ: noEnv(t), HostLockDir: filepath.Join(t.TempDir(), "cc-connect-locks")}
}

func find(t *testing.T, r Report, name string) Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check named %q in %+v", name, r.Checks)
	return Check{}
}

func wantCheck(t *testing.T, c Check, status Status, detail string) {
	t.Helper()
	if c.Status != status || !strings.Contains(c.Detail, detail) {
		t.Errorf("%s = %s %q, want %s containing %q", c.Name, c.Status, c.Detail, status, detail)
	}
}

func TestGoodConfigPassesAndPrintsNoSecret(t *testing.T) {
	t.Parallel()
	cfg, opts := goodConfig(t)
	r := Run(context.Background(), cfg, opts)
	var out strings.Builder
	if err := r.Write(&out); err != nil {
		t.Fatal(err)
	}
	warnings := 0
	if os.Geteuid() == 0 {
		// The one warning a good config gets as root: the agent runs as
		// root too (agent.allow_root).
		warnings = 1
		wantCheck(t, find(t, r, "agent user"), Warn, "run as root (agent.allow_root = true) for platform eng, platform tg")
	}
	if r.Failed() || r.Count(Warn) != warnings {
		t.Errorf("a good config does not pass cleanly:\n%s", out.String())
	}
	for _, secret := range []string{"SECRETBOT", "SECRETAPP", "SECRETTG", "SECRETKEY"} {
		if strings.Contains(out.String(), secret) {
			t.Errorf("report shows a secret (%s):\n%s", secret, out.String())
		}
	}
	if !strings.HasSuffix(out.String(), fmt.Sprintf("%d %s, 0 failures: ready to run\n", warnings, plural(warnings, "warning"))) {
		t.Errorf("summary line missing:\n%s", out.String())
	}
	// Lock files were taken and released: a real run could start now.
	l, err := lease.StateDir(cfg.State.Dir)
	if err != nil {
		t.Fatalf("doctor left the state dir locked: %v", err)
	}
	l.Release()
}

func TestClaudeCheck(t *testing.T) {
	t.Parallel()
	tested := agentproc.TestedClaudeVersion
	for _, tt := range []struct {
		name   string
		script string // a fakeClaudes name; "" = command not found
		env    map[string]config.Secret
		status Status
		detail string
	}{
		{"missing", "", nil, Fail, `agent.command "claude-missing" not found in PATH: install Claude Code ` + tested},
		{"tested version", "tested", nil, OK, tested + " at "},
		{"other version", "older", nil, Warn, "2.0.1 at "},
		{"agent env reaches it", "env", map[string]config.Secret{"FAKE_VERSION": "9.9.9"}, Warn, "9.9.9 at "},
		{"offline switches", "offline", nil, Warn, "1.1.0 at "},
		{"fails", "fails", nil, Fail, "--version failed: exit status 3: node: bad option"},
		{"not claude", "hello", nil, Fail, `printed no version ("hello")`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := config.Default()
			cfg.Agent.Env = tt.env
			cfg.Agent.Command = "claude-missing"
			if tt.script != "" {
				cfg.Agent.Command = fakeClaudes[tt.script]
			}
			c := checkClaude(context.Background(), &cfg, Options{}.withDefaults())
			wantCheck(t, c, tt.status, tt.detail)
		})
	}
}

func TestTestedVersionMatchesTheIntegrationTier(t *testing.T) {
	if agentproc.TestedClaudeVersion != testenv.ClaudeVersion {
		t.Errorf("agentproc.TestedClaudeVersion %s != testenv.ClaudeVersion %s", agentproc.TestedClaudeVersion, testenv.ClaudeVersion)
	}
}

func TestLoginCheck(t *testing.T) {
	t.Parallel()
	withFile := func(name, content string) func(t *testing.T, home string) {
		return func(t *testing.T, home string) {
			dir := filepath.Join(home, ".claude")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tt := range []struct {
		name     string
		agentEnv map[string]config.Secret
		procEnv  map[string]string
		setup    func(t *testing.T, home string)
		status   Status
		detail   string
	}{
		{"key in agent env", map[string]config.Secret{"ANTHROPIC_API_KEY": "sk-x"}, nil, nil, OK, "ANTHROPIC_API_KEY is set in agent.env"},
		{"token in process env", nil, map[string]string{"ANTHROPIC_AUTH_TOKEN": "t"}, nil, OK, "ANTHROPIC_AUTH_TOKEN is set in cc-connect's environment"},
		{"oauth token", nil, map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": "t"}, nil, OK, "CLAUDE_CODE_OAUTH_TOKEN"},
		{"empty key is no key", map[string]config.Secret{"ANTHROPIC_API_KEY": ""}, nil, nil, Warn, "Not logged in"},
		{"bedrock", nil, map[string]string{"CLAUDE_CODE_USE_BEDROCK": "1"}, nil, OK, "CLAUDE_CODE_USE_BEDROCK is set"},
		{"bedrock off", nil, map[string]string{"CLAUDE_CODE_USE_BEDROCK": "0"}, nil, Warn, "Not logged in"},
		{"credentials file", nil, nil, withFile(".credentials.json", `{"claudeAiOauth":{}}`), OK, "logged in ("},
		{"empty credentials file", nil, nil, withFile(".credentials.json", ``), Warn, "Not logged in"},
		{"api key helper", nil, nil, withFile("settings.json", `{"apiKeyHelper": "vault read key"}`), OK, "apiKeyHelper"},
		{"nothing", nil, nil, nil, Warn, "Not logged in · Please run /login"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			env := map[string]string{"HOME": home}
			for k, v := range tt.procEnv {
				env[k] = v
			}
			if tt.setup != nil {
				tt.setup(t, home)
			}
			cfg := config.Default()
			cfg.Agent.Env = tt.agentEnv
			c := checkLogin(&cfg, Options{Environ: envOf(env)}.withDefaults())
			wantCheck(t, c, tt.status, tt.detail)
		})
	}
}

// TestLoginCheckFollowsClaudeConfigDir: the credentials are looked for where
// the agent will look, CLAUDE_CONFIG_DIR first.
func TestLoginCheckFollowsClaudeConfigDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".credentials.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Agent.Env = map[string]config.Secret{"CLAUDE_CONFIG_DIR": config.Secret(dir)}
	c := checkLogin(&cfg, Options{Environ: noEnv(t)}.withDefaults())
	wantCheck(t, c, OK, filepath.Join(dir, ".credentials.json"))
}

func TestWorkspaceChecks(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := filepath.Join(base, "app")
	file := filepath.Join(base, "afile")
	ro := filepath.Join(base, "readonly")
	for _, p := range []string{dir, ro} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Bindings = []config.Binding{
		{Platform: "eng", Channel: "C1", Workspace: dir},
		{Platform: "eng", Channel: "C2", Workspace: dir}, // same folder: one check
		{Platform: "eng", Channel: "C3", Workspace: filepath.Join(base, "gone")},
		{Platform: "eng", Channel: "C4", Workspace: file},
		{Platform: "eng", Channel: "C5", Workspace: ro},
	}
	checks := checkWorkspaces(&cfg)
	if len(checks) != 4 {
		t.Fatalf("%d checks for 4 distinct workspaces: %+v", len(checks), checks)
	}
	r := Report{Checks: checks}
	wantCheck(t, find(t, r, "workspace "+dir), OK, "bound to eng/C1, eng/C2")
	wantCheck(t, find(t, r, "workspace "+filepath.Join(base, "gone")), Fail, "does not exist")
	wantCheck(t, find(t, r, "workspace "+file), Fail, "is not a folder")
	if os.Getuid() == 0 {
		t.Log("running as root: a read-only folder is still writable, its check is skipped")
	} else {
		wantCheck(t, find(t, r, "workspace "+ro), Warn, "is not writable")
	}
}

// TestWorkspaceChecksSkipOtherHosts: in a cluster, a binding this host
// neither owns nor stands by for has its workspace on another machine.
func TestWorkspaceChecksSkipOtherHosts(t *testing.T) {
	t.Parallel()
	here, gone := t.TempDir(), filepath.Join(t.TempDir(), "on-build-2")
	cfg := config.Default()
	cfg.Cluster = &config.Cluster{Host: "build-1", Members: []string{"build-1", "build-2"}}
	cfg.Bindings = []config.Binding{
		{Platform: "eng", Channel: "C1", Workspace: here, Host: "build-1"},
		{Platform: "eng", Channel: "C2", Workspace: gone, Host: "build-2"},
		{Platform: "eng", Channel: "C3", Workspace: gone + "-standby", Host: "build-2", Standby: []string{"build-1"}},
	}
	checks := checkWorkspaces(&cfg)
	if len(checks) != 2 {
		t.Fatalf("%d checks, want the two of this host (owner, standby): %+v", len(checks), checks)
	}
	r := Report{Checks: checks}
	wantCheck(t, find(t, r, "workspace "+here), OK, "bound to eng/C1")
	wantCheck(t, find(t, r, "workspace "+gone+"-standby"), Fail, "does not exist")
}

func TestStateDirCheck(t *testing.T) {
	t.Parallel()
	mkdir := func(mode os.FileMode) func(t *testing.T) string {
		return func(t *testing.T) string {
			d := filepath.Join(t.TempDir(), "state")
			if err := os.Mkdir(d, mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(d, mode); err != nil { // past the umask
				t.Fatal(err)
			}
			return d
		}
	}
	for _, tt := range []struct {
		name   string
		dir    func(t *testing.T) string
		root   bool // needs root (to chown), or not root (permissions bind)
		asRoot bool
		status Status
		detail string
	}{
		{"private", mkdir(0o700), false, false, OK, "is writable and private (mode 0700)"},
		{"group", mkdir(0o750), false, false, Fail, "open to other users (mode 0750)"},
		{"world", mkdir(0o755), false, false, Fail, "open to other users (mode 0755)"},
		{"shared like /tmp", func(t *testing.T) string {
			d := mkdir(0o700)(t)
			if err := os.Chmod(d, os.ModeSticky|0o777); err != nil {
				t.Fatal(err)
			}
			return d
		}, false, false, Fail, "`run` refuses it rather than change an existing folder's mode"},
		{"a link to a private folder", func(t *testing.T) string {
			d := mkdir(0o700)(t)
			link := filepath.Join(t.TempDir(), "link")
			if err := os.Symlink(d, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, false, false, OK, "is writable and private (mode 0700)"},
		{"missing", func(t *testing.T) string { return filepath.Join(t.TempDir(), "a", "state") }, false, false, OK, "does not exist yet"},
		{"a file", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "state")
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, false, false, Fail, "is not a folder"},
		{"not writable", func(t *testing.T) string {
			d := mkdir(0o500)(t)
			t.Cleanup(func() { os.Chmod(d, 0o700) })
			return d
		}, true, false, Fail, "is not writable"},
		{"missing under a read-only folder", func(t *testing.T) string {
			p := mkdir(0o500)(t)
			t.Cleanup(func() { os.Chmod(p, 0o700) })
			return filepath.Join(p, "state")
		}, true, false, Fail, "cannot be created"},
		{"someone else's", func(t *testing.T) string {
			d := mkdir(0o700)(t)
			if err := os.Chown(d, 4242, 4242); err != nil {
				t.Fatal(err)
			}
			return d
		}, true, true, Fail, "belongs to uid 4242"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.root && (os.Getuid() == 0) != tt.asRoot {
				t.Skip("needs to run as root to chown, or as a user whom permissions bind")
			}
			dir := tt.dir(t)
			wantCheck(t, checkStateDir(dir), tt.status, tt.detail)
			if entries, err := os.ReadDir(dir); err == nil && len(entries) != 0 {
				t.Errorf("the check left files behind: %v", entries)
			}
		})
	}
}

func TestTokenChecks(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		p      config.Platform
		status Status
		detail string
	}{
		{"local", config.Platform{Name: "l", Type: config.TypeLocal}, OK, "no token needed"},
		{"slack", config.Platform{Name: "s", Type: config.TypeSlack, BotToken: slackBot, AppToken: slackApp}, OK, "bot_token, app_token set"},
		{"slack no app token", config.Platform{Name: "s", Type: config.TypeSlack, BotToken: slackBot}, Fail, "app_token is empty"},
		{"slack swapped", config.Platform{Name: "s", Type: config.TypeSlack, BotToken: slackApp, AppToken: slackBot}, Fail, "bot_token does not start with xoxb-; app_token does not start with xapp-"},
		{"newline", config.Platform{Name: "t", Type: config.TypeTelegram, Token: tgToken + "\n"}, Fail, "token contains spaces or a line break"},
		{"telegram", config.Platform{Name: "t", Type: config.TypeTelegram, Token: tgToken}, OK, "token set"},
		{"discord empty", config.Platform{Name: "d", Type: config.TypeDiscord}, Fail, "token is empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := config.Default()
			cfg.Platforms = []config.Platform{tt.p}
			checks := checkTokens(&cfg)
			if len(checks) != 1 {
				t.Fatalf("%d checks, want 1", len(checks))
			}
			c := checks[0]
			if want := fmt.Sprintf("platform %s (%s)", tt.p.Name, tt.p.Type); c.Name != want {
				t.Errorf("name %q, want %q", c.Name, want)
			}
			wantCheck(t, c, tt.status, tt.detail)
			if strings.Contains(c.Detail, "SECRET") {
				t.Errorf("detail shows a token: %q", c.Detail)
			}
		})
	}
}

func TestLockChecks(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		hold  func(t *testing.T, cfg *config.Config, opts Options) *lease.Lock
		check string
	}{
		{"state dir held", func(t *testing.T, cfg *config.Config, _ Options) *lease.Lock {
			l, err := lease.StateDir(cfg.State.Dir)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}, "state dir lock"},
		{"token held", func(t *testing.T, _ *config.Config, opts Options) *lease.Lock {
			l, err := lease.Token(opts.HostLockDir, "another-name", tgToken)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}, "token lock tg"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, opts := goodConfig(t)
			if err := os.MkdirAll(cfg.State.Dir, 0o700); err != nil {
				t.Fatal(err)
			}
			// flock locks belong to the open file, so a second lease in
			// this process contends as another process would.
			held := tt.hold(t, cfg, opts)
			r := Report{Checks: checkLocks(cfg, opts.withDefaults())}
			wantCheck(t, find(t, r, tt.check), Fail, fmt.Sprintf("held by pid %d", os.Getpid()))
			if r.Count(Fail) != 1 {
				t.Errorf("only %s is held, yet: %+v", tt.check, r.Checks)
			}
			if err := held.Release(); err != nil {
				t.Fatal(err)
			}
			r = Report{Checks: checkLocks(cfg, opts.withDefaults())}
			wantCheck(t, find(t, r, tt.check), OK, "free (")
		})
	}
}

func TestLockCheckWithoutStateDir(t *testing.T) {
	t.Parallel()
	cfg, opts := goodConfig(t)
	r := Report{Checks: checkLocks(cfg, opts.withDefaults())}
	wantCheck(t, find(t, r, "state dir lock"), OK, "does not exist yet")
	if _, err := os.Stat(cfg.State.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lock check created the state dir: %v", err)
	}
	if len(r.Checks) != 3 { // state dir, slack eng, tg
		t.Errorf("checks %+v, want the state dir lock and two token locks", r.Checks)
	}
}

func TestMetricsCheck(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() }) // the parallel subtests run after this function returns
	for _, tt := range []struct {
		name   string
		m      config.Metrics
		status Status
		detail string
	}{
		{"off", config.Metrics{}, OK, "off"},
		{"free", config.Metrics{Addr: "127.0.0.1:0"}, OK, "can be served"},
		{"in use", config.Metrics{Addr: busy.Addr().String()}, Fail, "already running"},
		{"remote refused", config.Metrics{Addr: "0.0.0.0:0"}, Fail, "not a loopback address"},
		{"remote allowed", config.Metrics{Addr: "0.0.0.0:0", AllowRemote: true}, Warn, "reachable from other hosts"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := config.Default()
			cfg.Metrics = tt.m
			wantCheck(t, checkMetrics(&cfg), tt.status, tt.detail)
		})
	}
}

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.toml", "[[platforms]]\nname = \"local\"\ntype = \"local\"\n[[bindings]]\nplatform = \"local\"\nworkspace = \"ws\"\n")
	bad := write("bad.toml", "[agent]\nidle_timeout = \"3x\"\nqueue_limit = 0\n[[platforms]]\nname = \"local\"\ntype = \"local\"\n")

	cfg, checks := LoadConfig(good)
	if cfg == nil || len(checks) != 2 {
		t.Fatalf("good config: cfg %v, checks %+v", cfg, checks)
	}
	wantCheck(t, checks[0], OK, "(1 platform, 1 binding)")
	wantCheck(t, checks[1], Warn, "allow_users") // the binding allows nobody

	cfg, checks = LoadConfig(bad)
	if cfg != nil || len(checks) != 1 {
		t.Fatalf("bad config: cfg %v, checks %+v", cfg, checks)
	}
	wantCheck(t, checks[0], Fail, "agent.idle_timeout")
	wantCheck(t, checks[0], Fail, "\nagent.queue_limit") // every problem

	_, checks = LoadConfig(filepath.Join(dir, "none.toml"))
	wantCheck(t, checks[0], Fail, "config file not found")
}

func TestReportWrite(t *testing.T) {
	t.Parallel()
	r := Report{Checks: []Check{
		{Name: "claude", Status: OK, Detail: "2.1.328"},
		{Name: "claude login", Status: Warn, Detail: "not logged in"},
		{Name: "state dir", Status: Fail, Detail: "mode 0755"},
		{Name: "config", Status: Fail, Detail: "invalid config:\na: bad\nb: bad"},
	}}
	var b strings.Builder
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	want := "✓ claude: 2.1.328\n! claude login: not logged in\n✗ state dir: mode 0755\n✗ config: invalid config:\n    a: bad\n    b: bad\n\n1 ok, 1 warning, 2 failures: fix the failures above before running\n"
	if b.String() != want {
		t.Errorf("Write:\n%s\nwant:\n%s", b.String(), want)
	}
	if !r.Failed() {
		t.Error("Failed() = false with a failing check")
	}
	if (Report{Checks: r.Checks[:2]}).Failed() {
		t.Error("a warning fails the report")
	}
}

// TestLockCheckNamesAPlantedHostLockDir: when another user made the usual
// token-lock folder first, doctor says where the locks went and why.
func TestLockCheckNamesAPlantedHostLockDir(t *testing.T) {
	cfg, opts := goodConfig(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	usual := filepath.Join(tmp, "cc-connect-locks-"+strconv.Itoa(os.Getuid()))
	if err := os.Symlink(t.TempDir(), usual); err != nil {
		t.Fatal(err)
	}
	opts.HostLockDir = ""
	r := Run(context.Background(), cfg, opts)
	wantCheck(t, find(t, r, "host lock dir"), Warn, "token locks are kept in ")
	wantCheck(t, find(t, r, "token lock tg"), OK, "free (")
}

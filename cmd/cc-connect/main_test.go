package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/adminshell"
	"github.com/cc-connect/cc-connect/artifact"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/engine"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// TestRunLocalChatEndToEnd: a message on stdin reaches the (fake) claude
// through the engine and the reply comes back on stdout; at the end of input
// cc-connect finishes the work and exits 0.
func TestRunLocalChatEndToEnd(t *testing.T) {
	t.Parallel()
	path := setup(t, "")
	p := startBinary(t, "run", "--config", path)
	p.write(t, "hello from the terminal\n")
	p.stdin.Close()
	lines := p.waitOut(t, "echo: hello from the terminal")
	lines = append(lines, p.waitOut(t, "[ctx:")...)
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	for line := range p.out {
		lines = append(lines, line)
	}
	out := strings.Join(lines, "\n")
	if !strings.HasSuffix(strings.TrimRight(out, "\n"), "]") || strings.Count(out, "echo: hello") != 1 {
		t.Errorf("stdout = %q", out)
	}
	stderr := p.stderr.String()
	for _, want := range []string{"cc-connect started", "version=" + testVersion, "End of input and no work left", "cc-connect stopped"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if strings.Contains(out, "level=") {
		t.Error("log lines reached stdout")
	}
	info, err := os.Stat(filepath.Join(filepath.Dir(path), "state"))
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("state dir: %v, mode %v", err, info.Mode().Perm())
	}
}

// TestRunPermissionPromptInTerminal: a tool that needs approval is asked
// as text with the !allow hint, and !allow typed on stdin answers it.
func TestRunPermissionPromptInTerminal(t *testing.T) {
	t.Parallel()
	p := startBinary(t, "--config", setup(t, ""))
	p.write(t, "please [[TOOL:touch made.txt]]\n")
	p.waitOut(t, "!allow")
	p.write(t, "!allow\n")
	p.waitOut(t, "ran: touch made.txt")
	p.stdin.Close()
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
}

// TestRunSignals: SIGTERM shuts down gracefully (exit 0) even with stdin
// still open; a second signal during a hanging turn exits at once.
func TestRunSignals(t *testing.T) {
	t.Parallel()
	t.Run("one signal", func(t *testing.T) {
		t.Parallel()
		p := startBinary(t, "run", "--config", setup(t, ""))
		p.write(t, "hi\n")
		p.waitOut(t, "echo: hi")
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := p.exitCode(t); code != 0 {
			t.Fatalf("exit code %d, want 0", code)
		}
		if s := p.stderr.String(); !strings.Contains(s, "shutting down gracefully") || !strings.Contains(s, "Shutdown complete") {
			t.Errorf("stderr lacks the shutdown messages:\n%s", s)
		}
	})
	t.Run("two signals", func(t *testing.T) {
		t.Parallel()
		// A slow turn that ends only when the release file appears: exiting
		// at once leaves the agent to finish on its own, and the test must
		// not leave it running.
		release := filepath.Join(t.TempDir(), "release")
		t.Cleanup(func() { os.WriteFile(release, nil, 0o600) })
		p := startBinary(t, "run", "--config", setup(t, `shutdown_grace = "1h"`, fmt.Sprintf("FAKECLAUDE_RELEASE = %q", release)))
		p.write(t, "wait [[SLOW]]\n")
		p.waitErr(t, "Agent process started")
		if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		p.waitErr(t, "Shutting down")
		if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if code := p.exitCode(t); code != exitInterrupted {
			t.Fatalf("exit code %d, want %d", code, exitInterrupted)
		}
	})
}

// TestRunRefusesSecondInstance: two cc-connects on one state dir would
// both drive the same sessions.
func TestRunRefusesSecondInstance(t *testing.T) {
	t.Parallel()
	path := setup(t, "")
	first := startBinary(t, "run", "--config", path)
	first.waitErr(t, "cc-connect started")
	second := startBinary(t, "run", "--config", path)
	if code := second.exitCode(t); code != exitFailure {
		t.Fatalf("second instance exit code %d, want %d", code, exitFailure)
	}
	if s := second.stderr.String(); !strings.Contains(s, "is in use by pid") {
		t.Errorf("second instance stderr:\n%s", s)
	}
	first.stdin.Close()
	if code := first.exitCode(t); code != 0 {
		t.Errorf("first instance exit code %d", code)
	}
}

func TestBinaryExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[agent]\nidle_timeout = \"3x\"\n[[platforms]]\nname = \"l\"\ntype = \"local\"\n[[bindings]]\nplatform = \"l\"\nworkspace = \"/nonexistent/srv/app\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noClaude := filepath.Join(dir, "noclaude.toml")
	if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(noClaude, []byte("[agent]\ncommand = \"/nonexistent/claude\"\n[[platforms]]\nname = \"l\"\ntype = \"local\"\n[[bindings]]\nplatform = \"l\"\nworkspace = \"ws\"\nallow_users = [\"*\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{"version", []string{"version"}, 0, []string{"cc-connect " + testVersion, "tested with Claude Code " + testenv.ClaudeVersion}, nil},
		{"--version", []string{"--version"}, 0, []string{"cc-connect " + testVersion + "\n"}, nil},
		{"help", []string{"help"}, 0, []string{"cc-connect run [--config FILE]"}, nil},
		{"-h", []string{"-h"}, 0, []string{"Usage:", "cc-connect init [--platform"}, nil},
		{"--help", []string{"--help"}, 0, []string{"Usage:"}, nil},
		{"run --help", []string{"run", "--help"}, 0, []string{"Usage:"}, nil},
		{"doctor -h", []string{"doctor", "-h"}, 0, []string{"Usage:"}, nil},
		{"init -h", []string{"init", "-h"}, 0, []string{"Usage:"}, nil},
		{"unknown global flag", []string{"--verbose"}, 2, nil, []string{"flag provided but not defined: -verbose", `Run "cc-connect help"`}},
		{"bad config", []string{"run", "--config", bad}, 2, nil,
			[]string{`agent.idle_timeout: "3x" is not a duration`, "bindings[0].workspace: /nonexistent/srv/app does not exist"}},
		{"bad config, global flag", []string{"--config", bad}, 2, nil, []string{"agent.idle_timeout"}},
		{"missing config", []string{"--config", filepath.Join(dir, "config.toml")}, 2, nil,
			[]string{"config file not found", "Write a starter config with: cc-connect init --config " + filepath.Join(dir, "config.toml")}},
		{"claude missing", []string{"run", "--config", noClaude}, 2, nil, []string{`agent.command: "/nonexistent/claude" not found`}},
		{"unknown command", []string{"serve"}, 2, nil, []string{`unknown command "serve"`}},
		{"unknown flag", []string{"run", "--confg", bad}, 2, nil, []string{"flag provided but not defined: -confg"}},
		{"extra argument", []string{"run", "--config", bad, "extra"}, 2, nil, []string{`unexpected argument "extra"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(buildBinary(t), tt.args...)
			cmd.Dir = dir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var exitErr *exec.ExitError
			if errors.As(err, &exitErr) {
				code = exitErr.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstderr: %s", code, tt.code, stderr.String())
			}
			if tt.code == exitOK && stderr.Len() > 0 {
				t.Errorf("stderr of a command that succeeded: %s", stderr.String())
			}
			if tt.code != exitOK && stdout.Len() > 0 {
				t.Errorf("stdout of a command that failed: %s", stdout.String())
			}
			for _, w := range tt.stdout {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

func TestCheckCommand(t *testing.T) {
	t.Parallel()
	path := setup(t, "")
	var out, errOut bytes.Buffer
	code := cli(context.Background(), []string{"check", "--config", path}, stdio{In: strings.NewReader(""), Out: &out, Err: &errOut})
	if code != 0 {
		t.Fatalf("check exit code %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), `type = "local"`) || !strings.Contains(errOut.String(), "OK") {
		t.Errorf("check output:\n%s\n%s", out.String(), errOut.String())
	}
}

func TestClaudeVersionMatchesTestTier(t *testing.T) {
	if claudeCodeVersion != testenv.ClaudeVersion {
		t.Errorf("cc-connect version says Claude Code %s, the test tier pins %s", claudeCodeVersion, testenv.ClaudeVersion)
	}
}

func TestUnavailablePlatformType(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Platforms: []config.Platform{{Name: "l", Type: "local"}, {Name: "s", Type: "slack"}}}
	registry := map[string]adapterFactory{config.TypeLocal: newLocalAdapter}
	err := checkAvailable(cfg, registry)
	if err == nil || !strings.Contains(err.Error(), "platforms[1].type: platform type slack is not available in this build") {
		t.Errorf("checkAvailable = %v", err)
	}
	if err := checkAvailable(&config.Config{Platforms: cfg.Platforms[:1]}, registry); err != nil {
		t.Errorf("local only: %v", err)
	}
	// Every type the config accepts either has an adapter or is refused
	// with that message; none falls through to a silent no-op.
	for _, typ := range []string{config.TypeLocal, config.TypeSlack, config.TypeDiscord, config.TypeTelegram} {
		c := &config.Config{Platforms: []config.Platform{{Name: "x", Type: typ}}}
		_, inBuild := adapterFactories[typ]
		err := checkAvailable(c, adapterFactories)
		if inBuild != (err == nil) {
			t.Errorf("type %s: in registry %t, checkAvailable = %v", typ, inBuild, err)
		}
	}
}

// TestEngineOptionsCoverEveryField fails when the engine grows an option
// the binary does not set from the config.
func TestEngineOptionsCoverEveryField(t *testing.T) {
	t.Parallel()
	path := setup(t, `
model = "sonnet"
max_processes = 3
self_report = true
max_turn_time = "2h"
`)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	no := false
	cfg.Bindings[0].RequireMention = &no
	cfg.Bindings[0].Admins = []string{"root"}
	cfg.Bindings[0].Approvers = []string{"root"}
	cfg.Bindings[0].AllowShell = true
	cfg.Bindings[0].Worktree = true
	cfg.Bindings[0].CapUserDailyUSD = 5
	cfg.Spend.AdminsExempt = true
	haiku := "haiku"
	cfg.Bindings[0].Model = &haiku
	opts := engineOptions(cfg, newLogger(cfg.Log, io.Discard))
	for _, v := range []reflect.Value{reflect.ValueOf(opts), reflect.ValueOf(opts.Bindings[0])} {
		for i := range v.NumField() {
			name := v.Type().Field(i).Name
			if name == "Now" { // a test seam, not configuration
				continue
			}
			if name == "Metrics" { // set by run when [metrics] is on
				continue
			}
			if name == "Spending" { // set by run from the ledger it opened
				continue
			}
			if name == "Activity" { // set by run from the audit trail and the console it opened
				continue
			}
			if name == "ConsoleLinks" { // set by run when [console] is on
				continue
			}
			if name == "Host" || name == "Standby" { // a binding's cluster hosts, set only under [cluster]
				continue
			}
			if v.Field(i).IsZero() {
				t.Errorf("%s.%s is not set from the config", v.Type(), name)
			}
		}
	}
	b := opts.Bindings[0]
	if b.Platform != "tty" || b.Channel != "*" || b.Workspace != cfg.Bindings[0].Workspace ||
		b.RequireMention == nil || *b.RequireMention || b.Admins[0] != "root" || b.AllowUsers[0] != "*" || !b.AllowShell ||
		len(b.Approvers) != 1 || b.Approvers[0] != "root" || b.Setup.Model == nil || *b.Setup.Model != "haiku" {
		t.Errorf("binding = %+v", b)
	}
	if opts.Agent.Model != "sonnet" || opts.MaxProcesses != 3 || opts.IdleTimeout != 30*time.Minute || opts.StateDir != cfg.State.Dir {
		t.Errorf("options = %+v", opts)
	}
}

func TestSignalContext(t *testing.T) {
	t.Parallel()
	sigs := make(chan os.Signal, 2)
	second := make(chan struct{})
	var errOut lockedBuffer
	w := writerFunc(func(p []byte) (int, error) { errOut.add(string(p)); return len(p), nil })
	ctx, cancel := signalContext(context.Background(), sigs, w, nil, func() { close(second) })
	defer cancel()
	sigs <- syscall.SIGTERM
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("first signal did not cancel the context")
	}
	select {
	case <-second:
		t.Fatal("second-signal action ran after one signal")
	default:
	}
	sigs <- syscall.SIGINT
	select {
	case <-second:
	case <-time.After(10 * time.Second):
		t.Fatal("second signal did not exit")
	}
	if !strings.Contains(errOut.String(), "terminated received, shutting down gracefully") {
		t.Errorf("message = %q", errOut.String())
	}
	cancel() // idempotent
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestConfigDefaultsMatchEngineDefaults: the config writes its defaults out
// (config.example.toml shows them), so they must be the values the engine
// and its helpers would pick by themselves.
func TestConfigDefaultsMatchEngineDefaults(t *testing.T) {
	t.Parallel()
	def := config.Default()
	cfg := &def
	opts := engineOptions(cfg, nil)
	checks := []struct {
		name      string
		got, want any
	}{
		{"queue_limit", opts.QueueLimit, engine.DefaultQueueLimit},
		{"context_window", opts.ContextWindow, int64(engine.DefaultContextWindow)},
		{"shutdown_grace", opts.ShutdownGrace, engine.DefaultShutdownGrace},
		{"allowed_modes", opts.AllowedModes, engine.DefaultAllowedModes},
		{"shell_timeout", opts.ShellTimeout, adminshell.DefaultTimeout},
		{"seen_window", opts.SeenWindow, inbox.DefaultSeenWindow},
		{"artifact_threshold", opts.ArtifactThreshold, artifact.DefaultThreshold},
		{"artifact_quota", opts.ArtifactQuota, artifact.DefaultQuota},
		{"attachment_max_size", opts.AttachmentMaxBytes, engine.DefaultAttachmentMaxBytes},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: config default %v, engine default %v", c.name, c.got, c.want)
		}
	}
}

// TestBuildAdaptersForEveryType builds one adapter of each type from a
// config, as `run` does, without starting any.
func TestBuildAdaptersForEveryType(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	text := `
[[platforms]]
name = "tty"
type = "local"
[[platforms]]
name = "sl"
type = "slack"
bot_token = "xoxb-1"
app_token = "xapp-1"
api_url = "http://127.0.0.1:1/api/"
[[platforms]]
name = "dc"
type = "discord"
token = "d"
thread_per_message = true
[[platforms]]
name = "tg"
type = "telegram"
token = "1:t"
api_url = "http://127.0.0.1:1"
[[bindings]]
platform = "tty"
workspace = "."
allow_users = ["*"]
[[bindings]]
platform = "sl"
workspace = "."
allow_users = ["*"]
[[bindings]]
platform = "dc"
workspace = "."
allow_users = ["*"]
[[bindings]]
platform = "tg"
workspace = "."
allow_users = ["*"]
`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	adapters, err := buildAdapters(cfg, adapterDeps{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"tty": "*local.Adapter", "sl": "*slack.Adapter", "dc": "*discord.Adapter", "tg": "*telegram.Adapter"}
	if len(adapters) != len(want) {
		t.Fatalf("%d adapters, want %d", len(adapters), len(want))
	}
	for _, a := range adapters {
		if got := fmt.Sprintf("%T", a); got != want[a.Name()] {
			t.Errorf("adapter %s is %s, want %s", a.Name(), got, want[a.Name()])
		}
	}
}

func TestShutdownAtEOF(t *testing.T) {
	t.Parallel()
	local := config.Platform{Name: "tty", Type: config.TypeLocal}
	slack := config.Platform{Name: "sl", Type: config.TypeSlack}
	tests := []struct {
		platforms []config.Platform
		want      bool
	}{
		{[]config.Platform{local}, true},
		{[]config.Platform{local, slack}, false},
		{[]config.Platform{slack}, false},
	}
	for _, tt := range tests {
		if got := shutdownAtEOF(&config.Config{Platforms: tt.platforms}); got != tt.want {
			t.Errorf("platforms %v: shutdownAtEOF = %t, want %t", tt.platforms, got, tt.want)
		}
	}
}

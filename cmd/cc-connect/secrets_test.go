package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// These tests check what an agent can reach of cc-connect's secrets: an
// allowed user, or Claude acting on a prompt-injected file, asks for the
// config file and for /proc/<cc-connect pid>/environ. They need root to
// run processes as nobody (uid 65534), which needs no change to the user
// database.

const nobody = 65534

func needRoot(t *testing.T) {
	t.Helper()
	testenv.NeedRoot(t, "running the agent as another OS user")
}

// agentWorld is a folder tree that nobody can use: a workspace and a
// Claude Code config dir it owns, binaries it may run, and the private
// state and config file of a cc-connect running as root.
type agentWorld struct {
	dir, ws, claudeDir, bin string
}

func newAgentWorld(t *testing.T) *agentWorld {
	t.Helper()
	dir := t.TempDir()
	// nobody passes through t.TempDir's private parent and this folder,
	// but lists neither.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	w := &agentWorld{dir: dir, ws: filepath.Join(dir, "ws"), claudeDir: filepath.Join(dir, "claude"), bin: filepath.Join(dir, "bin")}
	for _, d := range []string{w.ws, w.claudeDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(w.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

// install copies the executable at src into the world's bin folder,
// where nobody may run it (the test builds live in private folders).
func (w *agentWorld) install(t *testing.T, src, name string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(w.bin, name)
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// canaries are the secrets of one test: unique, so a token lock of
// another test never collides and a leak is never a coincidence.
type canaries struct {
	literal, env, plain string
}

func newCanaries() canaries {
	id := strconv.FormatInt(time.Now().UnixNano(), 36)
	return canaries{literal: "111:LITERALCANARY" + id, env: "222:ENVCANARY" + id, plain: "plaincanary" + id}
}

func (c canaries) environ() []string {
	return []string{"CCX_TG_TOKEN=" + c.env, "CCX_PLAIN=" + c.plain}
}

// assertNone fails when text holds a canary.
func (c canaries) assertNone(t *testing.T, where, text string) {
	t.Helper()
	for _, s := range []string{c.literal, c.env, c.plain} {
		if strings.Contains(text, s) {
			t.Errorf("%s holds the secret %q:\n%s", where, s, text)
		}
	}
}

// secretsTOML is a config with one token in the file and one read from the
// environment (two Telegram bots whose API is a closed port: the adapters
// retry in the background), the terminal chat bound to ws, and tester an
// admin who may run !sh.
func secretsTOML(c canaries, state, agent string) string {
	return fmt.Sprintf(`
[state]
dir = %q
[log]
level = "debug"
[files]
artifact_threshold = "1KiB"
[agent]
%s
[[platforms]]
name = "tty"
type = "local"
[[platforms]]
name = "tg-file"
type = "telegram"
token = %q
api_url = "http://127.0.0.1:1"
[[platforms]]
name = "tg-env"
type = "telegram"
token = "${CCX_TG_TOKEN}"
api_url = "http://127.0.0.1:1"
[[bindings]]
platform = "tty"
workspace = "ws"
allow_users = ["tester"]
admins = ["tester"]
allow_shell = true
[[bindings]]
platform = "tg-file"
workspace = "ws"
allow_users = []
[[bindings]]
platform = "tg-env"
workspace = "ws"
allow_users = []
`, state, agent, c.literal)
}

// probe is the shell text that tries both paths to the secrets: the
// environment of cc-connect (the process whose pid is ccPID, a shell
// expression) and its config file. Its output ends with "end-<tag>", which
// the text itself does not hold (a chat echoes a !sh command).
func probe(ccPID, configPath, tag string) string {
	return fmt.Sprintf(`echo uid=$(id -u); cat /proc/%s/environ; echo; cat %s; echo end-"%s"`, ccPID, configPath, tag)
}

// TestAgentUserKeepsSecretsOutOfReach: cc-connect runs as root with a
// token in its environment and one in its config file, and the agent as
// nobody (agent.user). The agent's tools, a !btw fork and an admin's !sh
// try to read /proc/<cc-connect pid>/environ and the config file: both
// are refused, while every turn still works, the agent reads the large
// prompt stored for it, and !sessions finds its transcripts.
func TestAgentUserKeepsSecretsOutOfReach(t *testing.T) {
	t.Parallel()
	needRoot(t)
	w := newAgentWorld(t)
	c := newCanaries()
	claude := w.install(t, fakeclaude.Build(t), "claude")
	agent := fmt.Sprintf("command = %q\nuser = \"nobody\"\nenv = { CLAUDE_CONFIG_DIR = %q }", claude, w.claudeDir)
	path := writeConfig(t, w.dir, secretsTOML(c, filepath.Join(w.dir, "state"), agent))
	p := startBinaryEnv(t, c.environ(), "run", "--config", path)
	pid := strconv.Itoa(p.cmd.Process.Pid)

	p.write(t, "[[EXEC:"+probe(pid, path, "turn")+"]]\n")
	out := strings.Join(p.waitOut(t, "end-turn"), "\n")
	for _, want := range []string{"uid=65534", "/proc/" + pid + "/environ: Permission denied", path + ": Permission denied"} {
		if !strings.Contains(out, want) {
			t.Errorf("the agent's reply lacks %q:\n%s", want, out)
		}
	}
	c.assertNone(t, "the agent's reply", out)

	p.write(t, "!btw [[EXEC:"+probe(pid, path, "fork")+"]]\n")
	out = strings.Join(p.waitOut(t, "end-fork"), "\n")
	if !strings.Contains(out, "uid=65534") || !strings.Contains(out, "Permission denied") {
		t.Errorf("the fork's reply:\n%s", out)
	}
	c.assertNone(t, "the fork's reply", out)

	p.write(t, "!sh "+probe(pid, path, "sh")+"\n")
	out = strings.Join(p.waitOut(t, "end-sh"), "\n")
	if !strings.Contains(out, "uid=65534") || !strings.Contains(out, "Permission denied") {
		t.Errorf("the !sh reply:\n%s", out)
	}
	c.assertNone(t, "the !sh reply", out)

	// A message over the threshold is stored in .cc-connect/ and the agent
	// is pointed at it: it must be able to read it.
	big := `[[EXEC:cat .cc-connect/artifacts/*.md | head -c 40; echo; echo end-"artifact"]] ` + strings.Repeat("lorem ipsum ", 200)
	p.write(t, big+"\n")
	out = strings.Join(p.waitOut(t, "end-artifact"), "\n")
	if !strings.Contains(out, "[[EXEC:cat .cc-connect/artifacts") || strings.Contains(out, "Permission denied") {
		t.Errorf("the agent could not read the stored prompt:\n%s", out)
	}

	p.write(t, "!sessions\n")
	p.waitOut(t, "(current)")
	stop(t, p)
	c.assertNone(t, "the log", p.stderr.String())
	if entries, err := os.ReadDir(filepath.Join(w.claudeDir, "projects")); err != nil || len(entries) == 0 {
		t.Errorf("no transcripts in the agent's config dir: %v", err)
	}
}

// TestRealCLIAsAgentUserCannotReadSecrets: the same with the real claude
// CLI, whose Bash tool runs the probe (bypassPermissions: Claude Code
// allows it for a user that is not root). The tool result the CLI sends to
// the API holds neither secret.
func TestRealCLIAsAgentUserCannotReadSecrets(t *testing.T) {
	t.Parallel()
	needRoot(t)
	bin := testenv.ClaudeBinary(t)
	w := newAgentWorld(t)
	// The CLI must be reachable by nobody where it is installed.
	probeCmd := exec.Command(bin, "--version")
	probeCmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	probeCmd.Env = []string{"HOME=" + w.claudeDir, "DISABLE_AUTOUPDATER=1"}
	if out, err := probeCmd.CombinedOutput(); err != nil {
		t.Skipf("nobody cannot run %s here (%v: %s)", bin, err, out)
	}
	c := newCanaries()
	api := fakeapi.Start(t)
	home := filepath.Join(w.claudeDir, "home")
	agent := fmt.Sprintf(`command = %q
user = "nobody"
permission_mode = "bypassPermissions"
[agent.env]
HOME = %q
CLAUDE_CONFIG_DIR = %q
ANTHROPIC_BASE_URL = "${CC_CONNECT_TEST_API_URL}"
ANTHROPIC_API_KEY = "sk-cc-connect-test-key"
DISABLE_TELEMETRY = "1"`, bin, home, w.claudeDir)
	path := writeConfig(t, w.dir, secretsTOML(c, filepath.Join(w.dir, "state"), agent))
	p := startBinaryEnv(t, append(c.environ(), "CC_CONNECT_TEST_API_URL="+api.URL()), "run", "--config", path)
	pid := strconv.Itoa(p.cmd.Process.Pid)

	p.write(t, "[[TOOL:"+probe(pid, path, "tool")+"; echo HOME=$HOME; printenv CCX_TG_TOKEN; echo printenv-exit=$?]]\n")
	p.waitOut(t, "[ctx:")
	stop(t, p)
	var results string
	for _, r := range api.Requests() {
		for _, tr := range r.ToolResults {
			results += tr.Content + "\n"
		}
	}
	for _, want := range []string{"uid=65534", "/proc/" + pid + "/environ: Permission denied", path + ": Permission denied", "end-tool", "HOME=" + home, "printenv-exit=1"} {
		if !strings.Contains(results, want) {
			t.Errorf("the tool result the CLI sent lacks %q:\n%s", want, results)
		}
	}
	c.assertNone(t, "the tool result sent to the API", results)
	c.assertNone(t, "the log", p.stderr.String())
}

// stop ends a cc-connect that serves more than the terminal (the end of
// its input does not stop it) as a service manager would: SIGTERM, then a
// graceful exit 0.
func stop(t *testing.T, p *process) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
}

// runAsNobody runs the cc-connect binary as nobody with stdin as its
// terminal input, and returns its stdout, stderr and exit code.
func runAsNobody(t *testing.T, w *agentWorld, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cc := w.install(t, buildBinary(t), "cc-connect")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cc, args...)
	cmd.Dir = w.dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "USER=tester", "HOME=" + w.claudeDir, "TMPDIR=" + w.claudeDir}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{nobody}}}
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// TestSameUserAgent: without agent.user the agent runs as cc-connect's own
// user (here both nobody). Its environment lacks what agent.env_drop
// names, and cc-connect is not dumpable, so /proc/<cc-connect pid>/environ
// is refused too; but the config file is that user's own, and the agent
// reads it.
// This is what docs/security.md says of the same-user setup.
func TestSameUserAgent(t *testing.T) {
	t.Parallel()
	needRoot(t)
	w := newAgentWorld(t)
	c := newCanaries()
	claude := w.install(t, fakeclaude.Build(t), "claude")
	// Only the terminal chat, so that the end of input ends the run; the
	// file's secret is a comment, the environment's a *_TOKEN variable.
	path := writeConfig(t, w.claudeDir, fmt.Sprintf(`# a secret kept in the file: %s
[state]
dir = "state"
[agent]
command = %q
env = { CLAUDE_CONFIG_DIR = %q }
`, c.literal, claude, w.claudeDir)+localChatTOML)
	if err := os.Chown(path, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	// ws next to the config, as writeConfig made it, belongs to root.
	if err := os.Chown(filepath.Join(w.claudeDir, "ws"), nobody, nobody); err != nil {
		t.Fatal(err)
	}
	// The fake claude's parent is cc-connect: field 4 of its stat.
	cc := "$(cut -d' ' -f4 /proc/$PPID/stat)"
	stdout, stderr, code := runAsNobody(t, w, c.environ(), "[[EXEC:"+probe(cc, path, "turn")+"; printenv CCX_TG_TOKEN; echo printenv-exit=$?]]\n",
		"run", "--config", path)
	if code != 0 {
		t.Fatalf("exit code %d\nstderr:\n%s", code, stderr)
	}
	for _, want := range []string{"uid=65534", "/environ: Permission denied", "end-turn", "printenv-exit=1"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the agent's reply lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, c.env) || strings.Contains(stdout, c.plain) {
		t.Errorf("the agent reached cc-connect's environment:\n%s", stdout)
	}
	// What does not hold without agent.user: the file is the agent's to read.
	if !strings.Contains(stdout, c.literal) {
		t.Errorf("expected the same-user agent to read the config file's token (the documented gap); reply:\n%s", stdout)
	}
}

// TestRunRefusesAgentUserWithoutRoot: cc-connect running as nobody cannot
// start the agent as root; run refuses to start, naming the key, and
// check only warns.
func TestRunRefusesAgentUserWithoutRoot(t *testing.T) {
	t.Parallel()
	needRoot(t)
	w := newAgentWorld(t)
	claude := w.install(t, fakeclaude.Build(t), "claude")
	path := writeConfig(t, w.claudeDir, fmt.Sprintf(`
[state]
dir = "state"
[agent]
command = %q
user = "root"
`, claude)+localChatTOML)
	if err := os.Chown(path, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runAsNobody(t, w, nil, "", "run", "--config", path)
	want := "agent.user: starting the agent as another user needs cc-connect to run as root: cc-connect runs as uid 65534, agent.user is root (uid 0)"
	if code != exitUsage || !strings.Contains(stderr, want) {
		t.Errorf("run: exit %d, stderr %q; want %d and %q", code, stderr, exitUsage, want)
	}
	_, stderr, code = runAsNobody(t, w, nil, "", "check", "--config", path)
	if code != exitOK || !strings.Contains(stderr, "warning: "+want) {
		t.Errorf("check: exit %d, stderr %q", code, stderr)
	}
}

// TestReloadAddsSecretVariables: a reload that reads a token from a new
// variable adds it to the set no agent child gets.
func TestReloadAddsSecretVariables(t *testing.T) {
	t.Setenv("CCX_RELOAD_TG", "333:reload"+strconv.FormatInt(time.Now().UnixNano(), 36))
	r, _, _, path := newTestReloader(t, uniqueTokens(t, reloadBase))
	r.secrets = agentproc.NewSecretVars(r.running.SecretVarNames()...)
	agent := agentproc.Config{Secrets: r.secrets}
	if agentproc.DropReason("CCX_RELOAD_TG", agent) != "" {
		t.Fatal("the variable is secret before any config reads it")
	}
	edited := strings.Replace(uniqueTokens(t, reloadBase), `token = "222:bbb`, `token = "${CCX_RELOAD_TG}" # `, 1)
	writeFile(t, path, edited)
	r.reload(context.Background(), "test")
	if got := agentproc.DropReason("CCX_RELOAD_TG", agent); got != "config secret" {
		t.Errorf("after the reload, DropReason = %q; reloaded config reads %v", got, mustLoad(t, path).SecretVars)
	}
}

func mustLoad(t *testing.T, path string) *config.Config {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

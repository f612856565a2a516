package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// rootTOML is a config whose Telegram bot's API is a closed port (the
// adapter retries in the background) beside the terminal chat, with agent
// set as given and no allow_root unless agent says so.
func rootTOML(agent string) string {
	return fmt.Sprintf(`
[state]
dir = "state"
[agent]
%s
[[platforms]]
name = "tg"
type = "telegram"
token = "123:rootcanary"
api_url = "http://127.0.0.1:1"
[[bindings]]
platform = "tg"
workspace = "ws"
allow_users = []
`, agent) + localChatTOML
}

// writeRawConfig writes text as dir/config.toml as it is (writeConfig
// would add allow_root).
func writeRawConfig(t *testing.T, dir, text string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunRefusesRootWithoutAgentUser: as root, without agent.user, a chat
// platform is refused at start naming agent.allow_root and saying why;
// check warns; with allow_root = true it starts.
func TestRunRefusesRootWithoutAgentUser(t *testing.T) {
	t.Parallel()
	testenv.NeedRoot(t, "the refusal is of running as root")
	claude := fakeclaude.Build(t)
	path := writeRawConfig(t, t.TempDir(), rootTOML(fmt.Sprintf("command = %q", claude)))
	// The binary, not runCLI: should run start instead of refusing, the
	// test ends at once rather than serving the bot until its deadline.
	refused := startBinary(t, "run", "--config", path)
	deadline := time.After(testenv.HangLimit(t, 30*time.Second))
	for waiting := true; waiting; {
		select {
		case line := <-refused.errLn:
			if strings.Contains(line, "cc-connect started") {
				t.Fatalf("run started as root without agent.user:\n%s", refused.stderr.String())
			}
		case <-refused.exited:
			waiting = false
		case <-deadline:
			t.Fatal("run neither refused nor started")
		}
	}
	stderr := refused.stderr.String()
	for _, want := range []string{"agent.allow_root: the agent would run as root", "/proc/<cc-connect pid>/environ", "platform tg", "agent.user"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("run's refusal lacks %q:\n%s", want, stderr)
		}
	}
	if code := refused.exitCode(t); code != exitUsage {
		t.Errorf("run exit %d, want %d", code, exitUsage)
	}
	code, _, stderr := runCLI(t, "check", "--config", path)
	if code != exitOK || !strings.Contains(stderr, "warning: agent.allow_root: ") {
		t.Errorf("check: exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "doctor", "--config", path)
	if code == exitOK || !strings.Contains(stdout, "✗ agent user: agent.allow_root: ") {
		t.Errorf("doctor: exit %d\n%s%s", code, stdout, stderr)
	}

	allowed := writeRawConfig(t, t.TempDir(), rootTOML(fmt.Sprintf("command = %q\nallow_root = true", claude)))
	p := startBinary(t, "run", "--config", allowed)
	p.waitErr(t, "cc-connect started")
	stop(t, p)
}

// TestReloadCannotMakeARootAgentServeChat: a terminal run as root without
// agent.user is allowed; a reload that adds a chat platform to it is
// refused as run would refuse it, and the running config stays.
func TestReloadCannotMakeARootAgentServeChat(t *testing.T) {
	t.Parallel()
	testenv.NeedRoot(t, "the refusal is of running as root")
	base := "[agent]\ncommand = \"true\"\n" + localChatTOML
	r, ft, logs, path := newTestReloader(t, base)
	before := r.running
	writeFile(t, path, base+"[[platforms]]\nname = \"tg\"\ntype = \"telegram\"\ntoken = \"123:"+strconv.FormatInt(time.Now().UnixNano(), 36)+"\"\n"+
		"[[bindings]]\nplatform = \"tg\"\nworkspace = \"ws\"\nallow_users = [\"*\"]\n")
	r.reload(context.Background(), "test")
	if reloads, notices := ft.snapshot(); len(reloads) != 0 || len(notices) != 1 || !strings.Contains(notices[0], "agent.allow_root") {
		t.Errorf("reloads %+v, notices %q; want none and one naming agent.allow_root", reloads, notices)
	}
	if r.running != before {
		t.Error("the running config was replaced")
	}
	if recs := logs.Records("Config reload failed; the running config stays"); len(recs) != 1 || recs[0]["key"] != "agent.allow_root" {
		t.Errorf("records %v", recs)
	}
}

// TestSecretsReachNoChildNorCheck: the config's secrets (a platform token
// and a webhook secret, each read from a variable, and copies of their
// values under innocent names) reach neither claude, nor a !btw fork, nor
// !sh, nor check's output, nor the log.
func TestSecretsReachNoChildNorCheck(t *testing.T) {
	t.Parallel()
	id := strconv.FormatInt(time.Now().UnixNano(), 36)
	token, hook := "333:TOKENCANARY"+id, "hook-canary-"+id+"-0123456789"
	env := []string{"CCX_TG_SRC=" + token, "CCX_HOOK_SRC=" + hook, "CCX_INNOCENT_A=" + token, "CCX_INNOCENT_B=" + hook}
	dir := t.TempDir()
	path := writeConfig(t, dir, fmt.Sprintf(`
[state]
dir = "state"
[log]
level = "debug"
[agent]
command = %q
env = { CLAUDE_CONFIG_DIR = %q }
[[platforms]]
name = "tty"
type = "local"
[[platforms]]
name = "tg"
type = "telegram"
token = "${CCX_TG_SRC}"
api_url = "http://127.0.0.1:1"
[[bindings]]
platform = "tty"
workspace = "ws"
allow_users = ["tester"]
admins = ["tester"]
allow_shell = true
[[bindings]]
platform = "tg"
workspace = "ws"
allow_users = []
[webhooks]
addr = "127.0.0.1:0"
[[webhooks.hooks]]
name = "ci"
secret = "${CCX_HOOK_SRC}"
platform = "tty"
channel = "local"
prompt = "p"
template = "{{.a}}"
`, fakeclaude.Build(t), filepath.Join(dir, "claude")))
	leaks := func(where, text string) {
		t.Helper()
		for _, s := range []string{token, hook, "CCX_TG_SRC", "CCX_HOOK_SRC", "CCX_INNOCENT_"} {
			if strings.Contains(text, s) {
				t.Errorf("%s holds %q:\n%s", where, s, text)
			}
		}
	}

	check := startBinaryEnv(t, env, "check", "--config", path)
	if code := check.exitCode(t); code != exitOK {
		t.Fatalf("check exit %d:\n%s", code, check.stderr.String())
	}
	var out bytes.Buffer
	for line := range check.out {
		out.WriteString(line + "\n")
	}
	leaks("check's output", out.String()+check.stderr.String())

	p := startBinaryEnv(t, env, "run", "--config", path)
	p.write(t, "[[EXEC:env; echo end-turn]]\n")
	leaks("claude's environment", strings.Join(p.waitOut(t, "end-turn"), "\n"))
	p.write(t, "!btw [[EXEC:env; echo end-fork]]\n")
	leaks("the fork's environment", strings.Join(p.waitOut(t, "end-fork"), "\n"))
	p.write(t, "!sh env; echo end-\"sh\"\n")
	leaks("!sh's environment", strings.Join(p.waitOut(t, "end-sh"), "\n"))
	stop(t, p)
	leaks("the log", p.stderr.String())
}
